! include 'mpif.h': point-to-point with status fields and MPI_Get_count,
! nonblocking with arrays of requests and statuses (Waitall, Testany),
! Fortran datatype sizes, MPI_LAND / MPI_LOR on MPI_LOGICAL.
program f77_p2p
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, nprocs, errs, i, n, left, right, idx, total
  integer :: status(MPI_STATUS_SIZE), statuses(MPI_STATUS_SIZE, 4), reqs(4)
  integer :: ibuf(10), rbuf(10), rl(2), rr(2)
  double precision :: dbuf(5), drecv(5)
  logical :: flag, lin, lout
  integer :: sz

  errs = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)

  ! datatype sizes
  call MPI_TYPE_SIZE(MPI_INTEGER, sz, ierr);          if (sz /= 4) call fail('MPI_INTEGER size')
  call MPI_TYPE_SIZE(MPI_REAL, sz, ierr);             if (sz /= 4) call fail('MPI_REAL size')
  call MPI_TYPE_SIZE(MPI_DOUBLE_PRECISION, sz, ierr); if (sz /= 8) call fail('MPI_DOUBLE_PRECISION size')
  call MPI_TYPE_SIZE(MPI_COMPLEX, sz, ierr);          if (sz /= 8) call fail('MPI_COMPLEX size')
  call MPI_TYPE_SIZE(MPI_DOUBLE_COMPLEX, sz, ierr);   if (sz /= 16) call fail('MPI_DOUBLE_COMPLEX size')
  call MPI_TYPE_SIZE(MPI_LOGICAL, sz, ierr);          if (sz /= 4) call fail('MPI_LOGICAL size')
  call MPI_TYPE_SIZE(MPI_CHARACTER, sz, ierr);        if (sz /= 1) call fail('MPI_CHARACTER size')
  call MPI_TYPE_SIZE(MPI_INTEGER8, sz, ierr);         if (sz /= 8) call fail('MPI_INTEGER8 size')
  call MPI_TYPE_SIZE(MPI_REAL8, sz, ierr);            if (sz /= 8) call fail('MPI_REAL8 size')
  call MPI_TYPE_SIZE(MPI_2INTEGER, sz, ierr);         if (sz /= 8) call fail('MPI_2INTEGER size')
  if (ierr /= MPI_SUCCESS) call fail('ierr of MPI_TYPE_SIZE')

  ! blocking ring: rank r sends 10 integers tagged 100+r to r+1 (received
  ! from MPI_ANY_SOURCE; the tag keeps later messages of the right neighbour out)
  right = mod(rank + 1, nprocs)
  left = mod(rank - 1 + nprocs, nprocs)
  do i = 1, 10
    ibuf(i) = rank * 100 + i
  end do
  rbuf = -1
  call MPI_SENDRECV(ibuf, 10, MPI_INTEGER, right, 100 + rank, rbuf, 10, MPI_INTEGER, &
                    MPI_ANY_SOURCE, 100 + left, MPI_COMM_WORLD, status, ierr)
  if (ierr /= MPI_SUCCESS) call fail('sendrecv ierr')
  if (status(MPI_SOURCE) /= left) call fail('status(MPI_SOURCE)')
  if (status(MPI_TAG) /= 100 + left) call fail('status(MPI_TAG)')
  call MPI_GET_COUNT(status, MPI_INTEGER, n, ierr)
  if (n /= 10) call fail('MPI_GET_COUNT')
  do i = 1, 10
    if (rbuf(i) /= left * 100 + i) call fail('sendrecv data')
  end do

  ! a shorter message into a longer buffer, received with Probe first
  if (rank == 0 .and. nprocs > 1) then
    dbuf = (/ 1.5d0, 2.5d0, 3.5d0, 4.5d0, 5.5d0 /)
    call MPI_SEND(dbuf, 3, MPI_DOUBLE_PRECISION, 1, 7, MPI_COMM_WORLD, ierr)
  else if (rank == 1) then
    call MPI_PROBE(0, 7, MPI_COMM_WORLD, status, ierr)
    call MPI_GET_COUNT(status, MPI_DOUBLE_PRECISION, n, ierr)
    if (n /= 3) call fail('probe count')
    drecv = 0d0
    call MPI_RECV(drecv, 5, MPI_DOUBLE_PRECISION, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    if (drecv(1) /= 1.5d0 .or. drecv(3) /= 3.5d0 .or. drecv(4) /= 0d0) call fail('recv data')
  end if

  ! nonblocking: two receives and two sends, Waitall with statuses
  rl = -1
  rr = -1
  call MPI_IRECV(rl, 2, MPI_INTEGER, left, 1, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_IRECV(rr, 2, MPI_INTEGER, right, 2, MPI_COMM_WORLD, reqs(2), ierr)
  ibuf(1) = rank
  ibuf(2) = -rank
  call MPI_ISEND(ibuf, 2, MPI_INTEGER, right, 1, MPI_COMM_WORLD, reqs(3), ierr)
  call MPI_ISEND(ibuf, 2, MPI_INTEGER, left, 2, MPI_COMM_WORLD, reqs(4), ierr)
  call MPI_WAITALL(4, reqs, statuses, ierr)
  if (ierr /= MPI_SUCCESS) call fail('waitall')
  do i = 1, 4
    if (reqs(i) /= MPI_REQUEST_NULL) call fail('request not MPI_REQUEST_NULL')
  end do
  if (rl(1) /= left .or. rl(2) /= -left) call fail('waitall data left')
  if (rr(1) /= right .or. rr(2) /= -right) call fail('waitall data right')
  if (statuses(MPI_SOURCE, 1) /= left .or. statuses(MPI_TAG, 2) /= 2) call fail('waitall statuses')
  call MPI_GET_COUNT(statuses(1, 2), MPI_INTEGER, n, ierr)
  if (n /= 2) call fail('count of statuses(:,2)')

  ! Testany until both complete; indices are 1-based
  call MPI_IRECV(rl, 1, MPI_INTEGER, left, 3, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_ISEND(rank, 1, MPI_INTEGER, right, 3, MPI_COMM_WORLD, reqs(2), ierr)
  total = 0
  do while (total < 2)
    call MPI_TESTANY(2, reqs, idx, flag, status, ierr)
    if (flag) then
      if (idx == MPI_UNDEFINED) exit
      if (idx < 1 .or. idx > 2) call fail('testany index not 1-based')
      if (reqs(idx) /= MPI_REQUEST_NULL) call fail('testany request')
      if (idx == 1 .and. status(MPI_SOURCE) /= left) call fail('testany status')
      total = total + 1
    end if
  end do
  if (rl(1) /= left) call fail('testany data')
  call MPI_TESTANY(2, reqs, idx, flag, status, ierr)
  if (.not. flag .or. idx /= MPI_UNDEFINED) call fail('testany on null requests')

  ! logical reductions
  lin = rank == 0
  call MPI_ALLREDUCE(lin, lout, 1, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
  if (.not. lout) call fail('MPI_LOR')
  call MPI_ALLREDUCE(lin, lout, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  if (lout .neqv. (nprocs == 1)) call fail('MPI_LAND')
  lin = .true.
  call MPI_ALLREDUCE(lin, lout, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  if (.not. lout) call fail('MPI_LAND all true')

  call finish('f77_p2p')

contains
  include 'report.inc'
end program f77_p2p
