! include 'mpif.h': derived datatypes built from Fortran arrays: vector,
! indexed, struct with MPI_GET_ADDRESS and MPI_BOTTOM, type extent and name.
program f77_types
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, np, errs, i, j, vec, idx, st, peer, sz, rlen
  integer :: a(4, 4), b(4, 4), blens(3), disps(3), types(3)
  integer(kind=MPI_ADDRESS_KIND) :: addrs(3), lb, extent
  integer :: ival
  double precision :: dval(2)
  character(len=8) :: cval
  integer :: ival2
  double precision :: dval2(2)
  character(len=8) :: cval2
  character(len=MPI_MAX_OBJECT_NAME) :: name

  errs = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  peer = mpi_peer()

  do j = 1, 4
    do i = 1, 4
      a(i, j) = 10 * i + j + 1000 * rank
    end do
  end do

  ! a row of a(4,4): 4 blocks of 1, stride 4
  call MPI_TYPE_VECTOR(4, 1, 4, MPI_INTEGER, vec, ierr)
  call MPI_TYPE_COMMIT(vec, ierr)
  call MPI_TYPE_SIZE(vec, sz, ierr)
  if (sz /= 16) call fail('vector size')
  call MPI_TYPE_GET_EXTENT(vec, lb, extent, ierr)
  if (lb /= 0 .or. extent /= 52) call fail('vector extent')
  call MPI_TYPE_SET_NAME(vec, 'row type', ierr)
  call MPI_TYPE_GET_NAME(vec, name, rlen, ierr)
  if (name /= 'row type' .or. rlen /= 8) call fail('type name')
  b = -1
  call MPI_SENDRECV(a(2, 1), 1, vec, peer, 0, b(3, 1), 1, vec, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  do j = 1, 4
    if (b(3, j) /= 10 * 2 + j + 1000 * peer) call fail('vector data')
    if (b(1, j) /= -1) call fail('vector overwrote')
  end do

  ! the diagonal as an indexed type
  blens = 1
  disps(1) = 0
  disps(2) = 5
  disps(3) = 10
  call MPI_TYPE_INDEXED(3, blens, disps, MPI_INTEGER, idx, ierr)
  call MPI_TYPE_COMMIT(idx, ierr)
  b = -1
  call MPI_SENDRECV(a, 1, idx, peer, 1, b, 1, idx, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  do i = 1, 3
    if (b(i, i) /= 11 * i + 1000 * peer) call fail('indexed data')
  end do
  if (b(4, 4) /= -1 .or. b(2, 1) /= -1) call fail('indexed overwrote')

  ! a struct of absolute addresses, sent from MPI_BOTTOM
  ival = rank + 1
  dval = (/ rank * 0.5d0, -2d0 /)
  cval = 'fortran' // char(48 + rank)
  call MPI_GET_ADDRESS(ival, addrs(1), ierr)
  call MPI_GET_ADDRESS(dval, addrs(2), ierr)
  call MPI_GET_ADDRESS(cval, addrs(3), ierr)
  blens = (/ 1, 2, 8 /)
  types = (/ MPI_INTEGER, MPI_DOUBLE_PRECISION, MPI_CHARACTER /)
  call MPI_TYPE_CREATE_STRUCT(3, blens, addrs, types, st, ierr)
  call MPI_TYPE_COMMIT(st, ierr)
  call MPI_TYPE_SIZE(st, sz, ierr)
  if (sz /= 4 + 16 + 8) call fail('struct size')
  call MPI_GET_ADDRESS(ival2, addrs(1), ierr)
  call MPI_GET_ADDRESS(dval2, addrs(2), ierr)
  call MPI_GET_ADDRESS(cval2, addrs(3), ierr)
  call MPI_TYPE_CREATE_STRUCT(3, blens, addrs, types, j, ierr)
  call MPI_TYPE_COMMIT(j, ierr)
  call MPI_SENDRECV(MPI_BOTTOM, 1, st, peer, 2, MPI_BOTTOM, 1, j, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  if (ierr /= MPI_SUCCESS) call fail('struct sendrecv')
  if (ival2 /= peer + 1 .or. dval2(1) /= peer * 0.5d0 .or. dval2(2) /= -2d0) call fail('struct numbers')
  if (cval2 /= 'fortran' // char(48 + peer)) call fail('struct characters')

  call MPI_TYPE_FREE(vec, ierr)
  call MPI_TYPE_FREE(idx, ierr)
  call MPI_TYPE_FREE(st, ierr)
  call MPI_TYPE_FREE(j, ierr)
  if (vec /= MPI_DATATYPE_NULL) call fail('type_free')

  call finish('f77_types')

contains
  include 'report.inc'
  integer function mpi_peer()
    ! pairs (0,1), (2,3), ...; a lone last rank talks to itself
    mpi_peer = ieor(rank, 1)
    if (mpi_peer >= np) mpi_peer = rank
  end function mpi_peer
end program f77_types
