! include 'mpif.h': every blocking collective (with MPI_IN_PLACE where the
! standard allows it) and a user reduction op written in Fortran.
subroutine absmax(invec, inoutvec, len, datatype)
  implicit none
  integer :: len, datatype, i
  integer :: invec(len), inoutvec(len)
  do i = 1, len
    inoutvec(i) = max(abs(invec(i)), abs(inoutvec(i)))
  end do
  if (datatype < 0) inoutvec(1) = -1
end subroutine absmax

program f77_coll
  implicit none
  include 'mpif.h'
  external absmax
  integer :: ierr, rank, np, errs, i, j, root, op, expect
  integer, allocatable :: sbuf(:), rbuf(:), counts(:), displs(:), types(:)
  integer :: v(3), w(3)
  double precision :: d(2), dr(2)

  errs = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  allocate(sbuf(4 * np), rbuf(4 * np), counts(np), displs(np), types(np))
  root = np - 1

  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) call fail('barrier')

  ! bcast of doubles and integers from root
  d = 0d0
  if (rank == root) d = (/ 3.25d0, -1d0 /)
  call MPI_BCAST(d, 2, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD, ierr)
  if (d(1) /= 3.25d0 .or. d(2) /= -1d0) call fail('bcast')

  ! gather / gatherv (IN_PLACE at root) / scatter / scatterv
  v(1) = rank + 1
  rbuf = -1
  call MPI_GATHER(v, 1, MPI_INTEGER, rbuf, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    do i = 1, np
      if (rbuf(i) /= i) call fail('gather')
    end do
  end if
  do i = 1, np
    counts(i) = i
    displs(i) = (i - 1) * 4
  end do
  sbuf = rank
  if (rank == 0) then
    rbuf = -1
    rbuf(1) = 0
    call MPI_GATHERV(MPI_IN_PLACE, 0, MPI_INTEGER, rbuf, counts, displs, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    do i = 1, np
      do j = 1, i
        if (rbuf(displs(i) + j) /= i - 1) call fail('gatherv in place')
      end do
    end do
  else
    call MPI_GATHERV(sbuf, rank + 1, MPI_INTEGER, rbuf, counts, displs, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  end if
  do i = 1, 4 * np
    sbuf(i) = i
  end do
  call MPI_SCATTER(sbuf, 2, MPI_INTEGER, w, 2, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
  if (w(1) /= 2 * rank + 1 .or. w(2) /= 2 * rank + 2) call fail('scatter')
  rbuf = -1
  call MPI_SCATTERV(sbuf, counts, displs, MPI_INTEGER, rbuf, rank + 1, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
  do j = 1, rank + 1
    if (rbuf(j) /= rank * 4 + j) call fail('scatterv')
  end do

  ! allgather (and in place), allgatherv
  rbuf = -1
  call MPI_ALLGATHER(rank * 10, 1, MPI_INTEGER, rbuf, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do i = 1, np
    if (rbuf(i) /= (i - 1) * 10) call fail('allgather')
  end do
  rbuf = -1
  rbuf(rank + 1) = rank * 7
  call MPI_ALLGATHER(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do i = 1, np
    if (rbuf(i) /= (i - 1) * 7) call fail('allgather in place')
  end do
  sbuf = rank
  rbuf = -1
  call MPI_ALLGATHERV(sbuf, rank + 1, MPI_INTEGER, rbuf, counts, displs, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do i = 1, np
    do j = 1, i
      if (rbuf(displs(i) + j) /= i - 1) call fail('allgatherv')
    end do
  end do

  ! alltoall / alltoallv / alltoallw: element i goes to rank i-1
  do i = 1, np
    sbuf(i) = rank * 100 + i - 1
    counts(i) = 1
    displs(i) = i - 1
    types(i) = MPI_INTEGER
  end do
  rbuf = -1
  call MPI_ALLTOALL(sbuf, 1, MPI_INTEGER, rbuf, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do i = 1, np
    if (rbuf(i) /= (i - 1) * 100 + rank) call fail('alltoall')
  end do
  rbuf = -1
  call MPI_ALLTOALLV(sbuf, counts, displs, MPI_INTEGER, rbuf, counts, displs, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do i = 1, np
    if (rbuf(i) /= (i - 1) * 100 + rank) call fail('alltoallv')
  end do
  do i = 1, np
    displs(i) = (i - 1) * 4
  end do
  rbuf = -1
  call MPI_ALLTOALLW(sbuf, counts, displs, types, rbuf, counts, displs, types, MPI_COMM_WORLD, ierr)
  do i = 1, np
    if (rbuf(i) /= (i - 1) * 100 + rank) call fail('alltoallw')
  end do

  ! reduce, allreduce (in place), reduce_scatter, reduce_scatter_block, scan, exscan
  v = (/ rank, 1, -rank /)
  w = 0
  call MPI_REDUCE(v, w, 3, MPI_INTEGER, MPI_SUM, root, MPI_COMM_WORLD, ierr)
  if (rank == root) then
    if (w(1) /= np * (np - 1) / 2 .or. w(2) /= np .or. w(3) /= -np * (np - 1) / 2) call fail('reduce')
  end if
  w = v
  if (rank == root) then
    call MPI_REDUCE(MPI_IN_PLACE, w, 3, MPI_INTEGER, MPI_MAX, root, MPI_COMM_WORLD, ierr)
    if (w(1) /= np - 1 .or. w(3) /= 0) call fail('reduce in place')
  else
    call MPI_REDUCE(w, v, 3, MPI_INTEGER, MPI_MAX, root, MPI_COMM_WORLD, ierr)
  end if
  d = (/ dble(rank), 2d0 /)
  call MPI_ALLREDUCE(MPI_IN_PLACE, d, 2, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (d(1) /= dble(np * (np - 1) / 2) .or. d(2) /= 2d0 * np) call fail('allreduce in place')
  d = (/ dble(rank), 2d0 /)
  call MPI_ALLREDUCE(d, dr, 2, MPI_DOUBLE_PRECISION, MPI_MIN, MPI_COMM_WORLD, ierr)
  if (dr(1) /= 0d0 .or. dr(2) /= 2d0) call fail('allreduce')
  do i = 1, np
    sbuf(i) = rank + i
    counts(i) = 1
  end do
  call MPI_REDUCE_SCATTER(sbuf, w, counts, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (w(1) /= np * (np - 1) / 2 + np * (rank + 1)) call fail('reduce_scatter')
  w = 0
  call MPI_REDUCE_SCATTER_BLOCK(sbuf, w, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (w(1) /= np * (np - 1) / 2 + np * (rank + 1)) call fail('reduce_scatter_block')
  call MPI_SCAN(rank + 1, w(1), 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (w(1) /= (rank + 1) * (rank + 2) / 2) call fail('scan')
  w(1) = -5
  call MPI_EXSCAN(rank + 1, w(1), 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank > 0 .and. w(1) /= rank * (rank + 1) / 2) call fail('exscan')

  ! a user op written in Fortran
  call MPI_OP_CREATE(absmax, .true., op, ierr)
  if (ierr /= MPI_SUCCESS) call fail('op_create')
  v = (/ -rank, rank * 2, 1 /)
  call MPI_ALLREDUCE(v, w, 3, MPI_INTEGER, op, MPI_COMM_WORLD, ierr)
  expect = np - 1
  if (w(1) /= expect .or. w(2) /= 2 * expect .or. w(3) /= 1) call fail('user op')
  call MPI_OP_FREE(op, ierr)
  if (op /= MPI_OP_NULL) call fail('op_free')

  deallocate(sbuf, rbuf, counts, displs, types)
  call finish('f77_coll')

contains
  include 'report.inc'
end program f77_coll
