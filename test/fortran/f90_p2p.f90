! use mpi: buffers of several types and ranks to one routine (built without
! -fallow-argument-mismatch), status fields, MPI_Get_count, Waitsome,
! Testall, persistent requests, MPI_Iprobe/MPI_Mprobe.
program f90_p2p
  use mpi
  implicit none
  integer :: ierr, rank, np, errs, left, right, i, n, outcount, done
  integer :: status(MPI_STATUS_SIZE), statuses(MPI_STATUS_SIZE, 3), reqs(3), indices(3), msg
  integer :: iscalar, iarr(3), iarr2(3), i2(2, 2)
  real :: r3(2, 2, 2)
  double precision :: dscalar
  complex :: c(2)
  logical :: flag
  character(len=5) :: word

  errs = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  right = mod(rank + 1, np)
  left = mod(rank - 1 + np, np)

  ! scalars, rank-1, rank-2, rank-3 arrays, complex and character buffers
  iscalar = rank
  call MPI_Sendrecv_replace(iscalar, 1, MPI_INTEGER, right, 5, left, 5, MPI_COMM_WORLD, status, ierr)
  if (iscalar /= left .or. status(MPI_SOURCE) /= left .or. status(MPI_TAG) /= 5) call fail('replace')
  dscalar = rank + 0.25d0
  call MPI_Sendrecv_replace(dscalar, 1, MPI_DOUBLE_PRECISION, right, 6, left, 6, MPI_COMM_WORLD, &
                            MPI_STATUS_IGNORE, ierr)
  if (dscalar /= left + 0.25d0) call fail('replace double')
  r3 = real(rank)
  call MPI_Sendrecv_replace(r3, 8, MPI_REAL, right, 7, left, 7, MPI_COMM_WORLD, status, ierr)
  call MPI_Get_count(status, MPI_REAL, n, ierr)
  if (n /= 8 .or. any(r3 /= real(left))) call fail('rank-3 real')
  i2 = reshape((/ 1, 2, 3, 4 /), (/ 2, 2 /)) * (rank + 1)
  call MPI_Sendrecv_replace(i2, 4, MPI_INTEGER, right, 8, left, 8, MPI_COMM_WORLD, status, ierr)
  if (i2(2, 2) /= 4 * (left + 1)) call fail('rank-2 integer')
  c = (/ cmplx(rank, 1), cmplx(-1, rank) /)
  call MPI_Sendrecv_replace(c, 2, MPI_COMPLEX, right, 9, left, 9, MPI_COMM_WORLD, status, ierr)
  if (c(1) /= cmplx(left, 1) .or. c(2) /= cmplx(-1, left)) call fail('complex')
  word = 'abc' // char(65 + rank) // 'z'
  call MPI_Sendrecv_replace(word, 5, MPI_CHARACTER, right, 10, left, 10, MPI_COMM_WORLD, status, ierr)
  if (word /= 'abc' // char(65 + left) // 'z') call fail('character')

  ! Waitsome over three receives; indices are 1-based
  iarr = -1
  do i = 1, 3
    call MPI_Irecv(iarr(i), 1, MPI_INTEGER, left, 20 + i, MPI_COMM_WORLD, reqs(i), ierr)
  end do
  do i = 3, 1, -1
    call MPI_Send(rank * 10 + i, 1, MPI_INTEGER, right, 20 + i, MPI_COMM_WORLD, ierr)
  end do
  done = 0
  do while (done < 3)
    call MPI_Waitsome(3, reqs, outcount, indices, statuses, ierr)
    if (outcount == MPI_UNDEFINED) exit
    do i = 1, outcount
      if (indices(i) < 1 .or. indices(i) > 3) call fail('waitsome index')
      if (statuses(MPI_TAG, i) /= 20 + indices(i)) call fail('waitsome status')
    end do
    done = done + outcount
  end do
  do i = 1, 3
    if (iarr(i) /= left * 10 + i) call fail('waitsome data')
  end do

  ! persistent requests with Startall and Testall
  call MPI_Recv_init(iarr, 3, MPI_INTEGER, left, 30, MPI_COMM_WORLD, reqs(1), ierr)
  iarr2 = rank
  call MPI_Send_init(iarr2, 3, MPI_INTEGER, right, 30, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Startall(2, reqs, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Testall(2, reqs, flag, MPI_STATUSES_IGNORE, ierr)
  end do
  if (any(iarr /= left)) call fail('persistent')
  if (reqs(1) == MPI_REQUEST_NULL) call fail('persistent request freed')
  call MPI_Request_free(reqs(1), ierr)
  call MPI_Request_free(reqs(2), ierr)

  ! matched probe
  call MPI_Send(rank, 1, MPI_INTEGER, right, 40, MPI_COMM_WORLD, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Iprobe(left, 40, MPI_COMM_WORLD, flag, status, ierr)
  end do
  call MPI_Mprobe(left, 40, MPI_COMM_WORLD, msg, status, ierr)
  call MPI_Mrecv(iscalar, 1, MPI_INTEGER, msg, status, ierr)
  if (iscalar /= left .or. msg /= MPI_MESSAGE_NULL) call fail('mprobe')

  call finish('f90_p2p')

contains
  include 'report.inc'
end program f90_p2p
