! use mpi_f08: collectives (Barrier, Bcast, Reduce, Allreduce with
! MPI_IN_PLACE, Gather, Allgather, Scatter, Alltoall, Iallreduce) with
! omitted IERROR, and strided array sections as buffers of Bcast,
! Allreduce (a contiguous copy) and Allgather (a datatype from the stride):
! exactly the selected elements change.
program f08_coll
  use mpi_f08
  implicit none
  integer, parameter :: n = 10
  integer :: rank, np, i, j, ierr, bad
  integer :: x(2 * n), v(n), w(n), s(2 * n), r(2 * n), sc, g(64), gs(128)
  real :: rv(3)
  type(MPI_Request) :: req

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  call MPI_Barrier(MPI_COMM_WORLD)

  ! Bcast: a scalar, an array, a strided section
  sc = -1
  if (rank == 0) sc = 42
  call MPI_Bcast(sc, 1, MPI_INTEGER, 0, MPI_COMM_WORLD)
  if (sc /= 42) call fail('bcast scalar')
  rv = 0
  if (rank == 0) rv = [1.5, 2.5, 3.5]
  call MPI_Bcast(rv, 3, MPI_REAL, 0, MPI_COMM_WORLD, ierr)
  if (any(rv /= [1.5, 2.5, 3.5]) .or. ierr /= MPI_SUCCESS) call fail('bcast array')
  x = -5
  if (rank == 0) x = [(i, i = 1, 2 * n)]
  call MPI_Bcast(x(1:2 * n:2), n, MPI_INTEGER, 0, MPI_COMM_WORLD)
  do i = 1, 2 * n
    if (mod(i, 2) == 1 .and. x(i) /= i) call fail('bcast strided: selected')
    if (mod(i, 2) == 0 .and. rank /= 0 .and. x(i) /= -5) call fail('bcast strided: others')
  end do

  ! Reduce, Allreduce, MPI_IN_PLACE
  v = [(rank + i, i = 1, n)]
  w = -1
  call MPI_Reduce(v, w, n, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
  if (rank == 0) then
    do i = 1, n
      if (w(i) /= np * i + np * (np - 1) / 2) call fail('reduce')
    end do
  end if
  call MPI_Allreduce(v, w, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD)
  do i = 1, n
    if (w(i) /= np - 1 + i) call fail('allreduce max')
  end do
  call MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  do i = 1, n
    if (v(i) /= np * i + np * (np - 1) / 2) call fail('allreduce in place')
  end do
  ! strided sendbuf and recvbuf
  s = [(100 * rank + i, i = 1, 2 * n)]
  r = -3
  call MPI_Allreduce(s(1:2 * n:2), r(2:2 * n:2), n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  do i = 1, n
    if (r(2 * i) /= np * (2 * i - 1) + 100 * np * (np - 1) / 2) call fail('allreduce strided: selected')
    if (r(2 * i - 1) /= -3) call fail('allreduce strided: others')
  end do
  r = -3
  r(1:2 * n:2) = s(1:2 * n:2)
  call MPI_Allreduce(MPI_IN_PLACE, r(1:2 * n:2), n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  do i = 1, n
    if (r(2 * i - 1) /= np * (2 * i - 1) + 100 * np * (np - 1) / 2) call fail('allreduce in place strided')
    if (r(2 * i) /= -3) call fail('allreduce in place strided: others')
  end do

  ! Gather, Allgather (also into a strided section), Scatter, Alltoall
  g = -1
  call MPI_Gather(rank * 3, 1, MPI_INTEGER, g, 1, MPI_INTEGER, 0, MPI_COMM_WORLD)
  if (rank == 0) then
    do i = 1, np
      if (g(i) /= (i - 1) * 3) call fail('gather')
    end do
  end if
  v(1:2) = [rank, -rank]
  g = -1
  call MPI_Allgather(v(1:2), 2, MPI_INTEGER, g, 2, MPI_INTEGER, MPI_COMM_WORLD)
  do i = 0, np - 1
    if (g(2 * i + 1) /= i .or. g(2 * i + 2) /= -i) call fail('allgather')
  end do
  gs = -9
  call MPI_Allgather(v(1:2), 2, MPI_INTEGER, gs(1:4 * np:2), 2, MPI_INTEGER, MPI_COMM_WORLD)
  bad = 0
  do i = 0, np - 1
    if (gs(4 * i + 1) /= i .or. gs(4 * i + 3) /= -i) bad = bad + 1
    if (gs(4 * i + 2) /= -9 .or. gs(4 * i + 4) /= -9) bad = bad + 1
  end do
  if (any(gs(4 * np + 1:) /= -9)) bad = bad + 1
  if (bad /= 0) call fail('allgather strided')
  if (rank == 0) g(1:np) = [(10 * i, i = 1, np)]
  sc = -1
  call MPI_Scatter(g, 1, MPI_INTEGER, sc, 1, MPI_INTEGER, 0, MPI_COMM_WORLD)
  if (sc /= 10 * (rank + 1)) call fail('scatter')
  g(1:np) = [(rank * 100 + j, j = 0, np - 1)]
  gs = -1
  call MPI_Alltoall(g, 1, MPI_INTEGER, gs, 1, MPI_INTEGER, MPI_COMM_WORLD)
  do j = 0, np - 1
    if (gs(j + 1) /= j * 100 + rank) call fail('alltoall')
  end do

  ! a nonblocking collective
  w = 0
  call MPI_Iallreduce(v, w, 2, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD, req)
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  if (w(1) /= 0 .or. w(2) /= -(np - 1)) call fail('iallreduce')
  if (req /= MPI_REQUEST_NULL) call fail('request after wait')

  call MPI_Finalize()
contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print *, 'f08_coll rank', rank, 'FAILED: ', what
    stop 1
  end subroutine fail
end program f08_coll
