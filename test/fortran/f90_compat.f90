! use mpi: what programs written for MPICH's or Open MPI's module expect of
! it: MPI_SIZEOF for variables of any type, kind and rank; MPI_F_SYNC_REG;
! a scalar where a per-process array is not significant (MPI_IN_PLACE
! alltoallv / alltoallw, a non-root process of gatherv); MPI_TYPE_CREATE_F90_*;
! the MPI-1 callbacks (MPI_NULL_COPY_FN, MPI_DUP_FN) and the typed PMPI_WTIME
! of the module.
program f90_compat
  use mpi
  implicit none
  integer :: ierr, rank, np, errs, i, j, sz, key, val, tf
  integer(kind=1) :: i1
  integer(kind=2) :: i2(3)
  integer(kind=8) :: i8(2, 2)
  real :: r4
  double precision :: r8(5)
  complex :: c8
  complex(kind=8) :: c16(2)
  logical :: l
  character(len=7) :: ch
  integer, allocatable :: rbuf(:), rcounts(:), rdispls(:), rtypes(:), all(:)
  integer :: mine(2)
  logical :: flag

  errs = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)

  call MPI_SIZEOF(i1, sz, ierr)
  if (sz /= 1 .or. ierr /= MPI_SUCCESS) call fail('sizeof integer(1)')
  call MPI_SIZEOF(i2, sz, ierr)
  if (sz /= 2) call fail('sizeof integer(2) array')
  call MPI_SIZEOF(i8, sz, ierr)
  if (sz /= 8) call fail('sizeof integer(8) 2-d array')
  call MPI_SIZEOF(r4, sz, ierr)
  if (sz /= 4) call fail('sizeof real')
  call MPI_SIZEOF(r8, sz, ierr)
  if (sz /= 8) call fail('sizeof double precision')
  call MPI_SIZEOF(c8, sz, ierr)
  if (sz /= 8) call fail('sizeof complex')
  call MPI_SIZEOF(c16, sz, ierr)
  if (sz /= 16) call fail('sizeof complex(8)')
  call MPI_SIZEOF(l, sz, ierr)
  if (sz /= 4) call fail('sizeof logical')
  call MPI_SIZEOF(ch, sz, ierr)
  if (sz /= 7) call fail('sizeof character(7)')
  r8 = 1d0
  call MPI_F_SYNC_REG(r8)
  if (PMPI_WTIME() <= 0d0 .or. MPI_WTICK() <= 0d0) call fail('PMPI_WTIME / MPI_WTICK')

  ! alltoallv in place: the send arguments are scalars (ignored).
  allocate(rbuf(2 * np), rcounts(np), rdispls(np), rtypes(np), all(2 * np))
  do i = 1, np
    rcounts(i) = 2
    rdispls(i) = 2 * (i - 1)
    rtypes(i) = MPI_INTEGER
    rbuf(2 * i - 1) = 1000 * rank + i
    rbuf(2 * i) = -(1000 * rank + i)
  end do
  call MPI_ALLTOALLV(MPI_IN_PLACE, 0, 0, MPI_DATATYPE_NULL, rbuf, rcounts, rdispls, MPI_INTEGER, &
                     MPI_COMM_WORLD, ierr)
  do i = 1, np
    if (rbuf(2 * i - 1) /= 1000 * (i - 1) + rank + 1 .or. rbuf(2 * i) /= -(1000 * (i - 1) + rank + 1)) &
      call fail('alltoallv in place data')
  end do
  do i = 1, np
    rdispls(i) = 8 * (i - 1)
  end do
  call MPI_ALLTOALLW(MPI_IN_PLACE, 0, 0, MPI_DATATYPE_NULL, rbuf, rcounts, rdispls, rtypes, &
                     MPI_COMM_WORLD, ierr)
  do i = 1, np
    if (rbuf(2 * i - 1) /= 1000 * rank + i) call fail('alltoallw in place data')
  end do
  ! gatherv: non-root processes pass scalars for recvcounts / displs.
  mine = (/ rank, 2 * rank /)
  if (rank == 0) then
    call MPI_GATHERV(mine, 2, MPI_INTEGER, all, rcounts, rdispls / 4, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    do j = 1, np
      if (all(2 * j - 1) /= j - 1 .or. all(2 * j) /= 2 * (j - 1)) call fail('gatherv data')
    end do
  else
    call MPI_GATHERV(mine, 2, MPI_INTEGER, MPI_BOTTOM, 0, 0, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  end if
  if (ierr /= MPI_SUCCESS) call fail('gatherv')

  ! Datatypes of selected kinds (MPI_TYPE_CREATE_F90_*), their sizes, and
  ! one used to move a REAL(KIND=SELECTED_REAL_KIND(15, 300)).
  call MPI_TYPE_CREATE_F90_INTEGER(9, tf, ierr)
  call MPI_TYPE_SIZE(tf, sz, ierr)
  if (ierr /= MPI_SUCCESS .or. sz /= 4) call fail('create_f90_integer(9)')
  call MPI_TYPE_CREATE_F90_INTEGER(18, tf, ierr)
  call MPI_TYPE_SIZE(tf, sz, ierr)
  if (sz /= 8) call fail('create_f90_integer(18)')
  call MPI_TYPE_CREATE_F90_REAL(6, 30, tf, ierr)
  call MPI_TYPE_SIZE(tf, sz, ierr)
  if (sz /= 4) call fail('create_f90_real(6, 30)')
  call MPI_TYPE_CREATE_F90_COMPLEX(15, 300, tf, ierr)
  call MPI_TYPE_SIZE(tf, sz, ierr)
  if (sz /= 16) call fail('create_f90_complex(15, 300)')
  call MPI_TYPE_CREATE_F90_REAL(15, 300, tf, ierr)
  call MPI_TYPE_SIZE(tf, sz, ierr)
  if (sz /= 8) call fail('create_f90_real(15, 300)')
  r8 = (/ (dble(rank) + 0.25d0 * i, i = 1, 5) /)
  call MPI_BCAST(r8, 5, tf, 0, MPI_COMM_WORLD, ierr)
  if (r8(5) /= 1.25d0 .or. ierr /= MPI_SUCCESS) call fail('bcast with a create_f90_real type')

  ! The MPI-1 callbacks are procedures of the module.
  call MPI_KEYVAL_CREATE(MPI_DUP_FN, MPI_NULL_DELETE_FN, key, 0, ierr)
  call MPI_ATTR_PUT(MPI_COMM_WORLD, key, 77, ierr)
  call MPI_ATTR_GET(MPI_COMM_WORLD, key, val, flag, ierr)
  if (.not. flag .or. val /= 77) call fail('MPI_ATTR_GET through the module')
  call MPI_ATTR_DELETE(MPI_COMM_WORLD, key, ierr)
  call MPI_KEYVAL_FREE(key, ierr)
  deallocate(rbuf, rcounts, rdispls, rtypes, all)

  call finish('f90_compat')
contains
  include 'report.inc'
end program f90_compat
