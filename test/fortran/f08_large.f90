! use mpi_f08: the large-count forms (MPI_<name>_c_f08 behind the generic
! names) chosen by INTEGER(KIND=MPI_COUNT_KIND) counts: point-to-point with
! MPI_Get_count into a count-kind variable, nonblocking, collectives with
! count-kind count arrays and address-kind displacements, MPI_Type_size;
! and MPI_Sizeof / MPI_F_sync_reg without IERROR.
program f08_large
  use mpi_f08
  implicit none
  integer :: rank, np, errs, i, isz
  integer(kind=MPI_COUNT_KIND) :: n, got, tsize
  integer(kind=MPI_COUNT_KIND), allocatable :: counts(:)
  integer(kind=MPI_ADDRESS_KIND), allocatable :: displs(:)
  double precision :: a(10), b(10)
  integer, allocatable :: all(:)
  integer :: mine(3)
  type(MPI_Status) :: st
  type(MPI_Request) :: reqs(2)
  type(MPI_Datatype) :: vec

  errs = 0
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  n = 10
  a = [(dble(i + rank), i = 1, 10)]
  call MPI_Allreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  if (b(3) /= dble(np * 3 + np * (np - 1) / 2)) call fail('allreduce_c')
  b = 0
  call MPI_Sendrecv(a, n, MPI_DOUBLE_PRECISION, mod(rank + 1, np), 5, b, n, MPI_DOUBLE_PRECISION, &
                    MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, st)
  call MPI_Get_count(st, MPI_DOUBLE_PRECISION, got)
  if (got /= 10_MPI_COUNT_KIND .or. b(1) /= dble(1 + mod(rank - 1 + np, np))) call fail('sendrecv_c / get_count_c')
  b = 0
  call MPI_Irecv(b, n, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 6, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(a, n, MPI_DOUBLE_PRECISION, mod(rank + 1, np), 6, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
  if (b(10) /= dble(10 + mod(rank - 1 + np, np))) call fail('isend_c / irecv_c')
  ! allgatherv_c: MPI_Count counts, MPI_Aint displacements.
  allocate(counts(np), displs(np), all(3 * np))
  counts = 3
  displs = [(3_MPI_ADDRESS_KIND * (i - 1), i = 1, np)]
  mine = [rank, rank * 10, rank * 100]
  all = -1
  n = 3
  call MPI_Allgatherv(mine, n, MPI_INTEGER, all, counts, displs, MPI_INTEGER, MPI_COMM_WORLD)
  do i = 1, np
    if (all(3 * i - 2) /= i - 1 .or. all(3 * i) /= (i - 1) * 100) call fail('allgatherv_c data')
  end do
  n = 4
  call MPI_Type_contiguous(n, MPI_DOUBLE_PRECISION, vec)
  call MPI_Type_size(vec, tsize)
  if (tsize /= 32_MPI_COUNT_KIND) call fail('type_contiguous_c / type_size_c')
  call MPI_Type_free(vec)
  call MPI_Sizeof(a, isz)
  if (isz /= 8) call fail('MPI_Sizeof without ierror')
  call MPI_F_sync_reg(a)
  deallocate(counts, displs, all)
  call finish('f08_large')
contains
  include 'report.inc'
end program f08_large
