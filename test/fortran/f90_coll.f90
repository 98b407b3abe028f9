! use mpi: collectives on arrays of several types and ranks, MPI_IN_PLACE,
! a user op written in Fortran on DOUBLE PRECISION, nonblocking collectives.
module f90_coll_ops
  implicit none
contains
  subroutine dprod(invec, inoutvec, len, datatype)
    integer :: len, datatype
    double precision :: invec(len), inoutvec(len)
    inoutvec = inoutvec * invec
    if (datatype == 0) inoutvec = 0
  end subroutine dprod
end module f90_coll_ops

program f90_coll
  use mpi
  use f90_coll_ops
  implicit none
  integer :: ierr, rank, np, errs, i, op, req
  double precision :: d(3), dr(3), expect
  integer :: m(2, 3), mr(2, 3)
  integer(kind=MPI_ADDRESS_KIND) :: ai(2)

  errs = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)

  m = rank
  call MPI_Allreduce(MPI_IN_PLACE, m, 6, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (any(m /= np * (np - 1) / 2)) call fail('allreduce in place rank-2')
  ai = (/ int(rank, MPI_ADDRESS_KIND), 2_MPI_ADDRESS_KIND**40 /)
  call MPI_Allreduce(MPI_IN_PLACE, ai, 2, MPI_AINT, MPI_MAX, MPI_COMM_WORLD, ierr)
  if (ai(1) /= np - 1 .or. ai(2) /= 2_MPI_ADDRESS_KIND**40) call fail('allreduce MPI_AINT')

  call MPI_Op_create(dprod, .true., op, ierr)
  d = (/ 2d0, dble(rank + 1), 1d0 /)
  call MPI_Reduce(d, dr, 3, MPI_DOUBLE_PRECISION, op, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    expect = 1d0
    do i = 1, np
      expect = expect * i
    end do
    if (dr(1) /= 2d0**np .or. dr(2) /= expect .or. dr(3) /= 1d0) call fail('user op reduce')
  end if
  call MPI_Op_free(op, ierr)

  m = -1
  if (rank == 0) m = reshape((/ 1, 2, 3, 4, 5, 6 /), (/ 2, 3 /))
  call MPI_Ibcast(m, 6, MPI_INTEGER, 0, MPI_COMM_WORLD, req, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  if (m(2, 3) /= 6 .or. m(1, 1) /= 1) call fail('ibcast')
  mr = 0
  call MPI_Iallreduce(m, mr, 6, MPI_INTEGER, MPI_PROD, MPI_COMM_WORLD, req, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  if (mr(1, 2) /= 3**np) call fail('iallreduce')
  call MPI_Ibarrier(MPI_COMM_WORLD, req, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  if (req /= MPI_REQUEST_NULL) call fail('ibarrier request')

  call finish('f90_coll')

contains
  include 'report.inc'
end program f90_coll
