! use mpi: a generalized request with Fortran query/free/cancel callbacks.
module cb
  use mpi
  implicit none
  integer :: freed = 0
contains
  subroutine q(extra, status, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra
    integer :: status(MPI_STATUS_SIZE), ierror
    call MPI_Status_set_elements(status, MPI_INTEGER, int(extra), ierror)
    call MPI_Status_set_cancelled(status, .false., ierror)
    status(MPI_SOURCE) = 3
    status(MPI_TAG) = 4
  end subroutine q
  subroutine f(extra, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra
    integer :: ierror
    freed = freed + int(extra)
    ierror = MPI_SUCCESS
  end subroutine f
  subroutine c(extra, complete, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra
    logical :: complete
    integer :: ierror
    ierror = MPI_SUCCESS
    if (extra < 0 .or. complete) ierror = MPI_ERR_OTHER
  end subroutine c
end module cb
program g
  use mpi
  use cb
  implicit none
  integer :: req, ierr, st(MPI_STATUS_SIZE), n
  call MPI_Init(ierr)
  call MPI_Grequest_start(q, f, c, 7_MPI_ADDRESS_KIND, req, ierr)
  call MPI_Grequest_complete(req, ierr)
  call MPI_Wait(req, st, ierr)
  call MPI_Get_count(st, MPI_INTEGER, n, ierr)
  if (n /= 7 .or. st(MPI_SOURCE) /= 3 .or. freed /= 7 .or. req /= MPI_REQUEST_NULL) then
    print *, 'grequest FAIL', n, st(MPI_SOURCE), freed
    stop 1
  end if
  print *, 'grequest OK'
  call MPI_Finalize(ierr)
end program g
