! use mpi_f08: the profiling interface. This program's own MPI_Comm_rank_f08
! and MPI_Allreduce_c_f08 (the specific procedures behind the generics)
! take the place of the library's and reach it through the PMPI_ generics;
! PMPI_ names are callable directly too.
module f08_profile_counts
  implicit none
  integer :: rank_calls = 0, allreduce_c_calls = 0
end module f08_profile_counts

subroutine MPI_Comm_rank_f08(comm, rank, ierror)
  use mpi_f08, only: MPI_Comm, PMPI_Comm_rank
  use f08_profile_counts
  implicit none
  type(MPI_Comm), intent(in) :: comm
  integer, intent(out) :: rank
  integer, optional, intent(out) :: ierror
  rank_calls = rank_calls + 1
  call PMPI_Comm_rank(comm, rank, ierror)
end subroutine MPI_Comm_rank_f08

subroutine MPI_Allreduce_c_f08(sendbuf, recvbuf, count, datatype, op, comm, ierror)
  use mpi_f08, only: MPI_Datatype, MPI_Op, MPI_Comm, MPI_COUNT_KIND, PMPI_Allreduce
  use f08_profile_counts
  implicit none
  type(*), dimension(..), intent(in) :: sendbuf
  type(*), dimension(..) :: recvbuf
  integer(kind=MPI_COUNT_KIND), intent(in) :: count
  type(MPI_Datatype), intent(in) :: datatype
  type(MPI_Op), intent(in) :: op
  type(MPI_Comm), intent(in) :: comm
  integer, optional, intent(out) :: ierror
  allreduce_c_calls = allreduce_c_calls + 1
  call PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm, ierror)
end subroutine MPI_Allreduce_c_f08

program f08_profile
  use mpi_f08
  use f08_profile_counts
  implicit none
  integer :: rank, np, errs, r2, total
  integer(kind=MPI_COUNT_KIND) :: one

  errs = 0
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  if (rank_calls /= 1) call fail('own MPI_Comm_rank_f08 not called')
  call PMPI_Comm_rank(MPI_COMM_WORLD, r2)
  if (r2 /= rank .or. rank_calls /= 1) call fail('PMPI_Comm_rank')
  one = 1
  call MPI_Allreduce(rank, total, one, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (allreduce_c_calls /= 1 .or. total /= np * (np - 1) / 2) call fail('own MPI_Allreduce_c_f08')
  if (PMPI_Wtime() <= 0d0) call fail('PMPI_Wtime')
  call PMPI_Barrier(MPI_COMM_WORLD)
  call finish('f08_profile')
contains
  include 'report.inc'
end program f08_profile
