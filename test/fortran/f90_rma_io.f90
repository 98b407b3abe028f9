! use mpi: one-sided (MPI_Win_create, put/get, fence, window attributes)
! and MPI-IO (write/read at explicit offsets, file size, a view).
program f90_rma_io
  use mpi
  implicit none
  integer :: ierr, rank, np, errs, win, fh, right, left
  integer :: local(4), got(4)
  integer(kind=MPI_ADDRESS_KIND) :: wsize, val, disp
  integer(kind=MPI_OFFSET_KIND) :: off, fsize
  logical :: flag
  integer :: wbuf(3), rbuf(3), status(MPI_STATUS_SIZE), n

  errs = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  right = mod(rank + 1, np)
  left = mod(rank - 1 + np, np)

  local = -1
  wsize = 4 * 4
  call MPI_Win_create(local, wsize, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call MPI_Win_get_attr(win, MPI_WIN_SIZE, val, flag, ierr)
  if (.not. flag .or. val /= 16) call fail('MPI_WIN_SIZE')
  call MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, val, flag, ierr)
  if (.not. flag .or. val /= 4) call fail('MPI_WIN_DISP_UNIT')
  call MPI_Win_fence(0, win, ierr)
  disp = 1
  call MPI_Put((/ rank, rank * 2 /), 2, MPI_INTEGER, right, disp, 2, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  if (local(1) /= -1 .or. local(2) /= left .or. local(3) /= 2 * left .or. local(4) /= -1) call fail('put')
  got = 0
  call MPI_Get(got, 4, MPI_INTEGER, left, 0_MPI_ADDRESS_KIND, 4, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  if (got(2) /= mod(left - 1 + np, np) .or. got(1) /= -1) call fail('get')
  call MPI_Accumulate(1, 1, MPI_INTEGER, 0, 3_MPI_ADDRESS_KIND, 1, MPI_INTEGER, MPI_SUM, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  if (rank == 0 .and. local(4) /= np - 1) call fail('accumulate')
  call MPI_Win_free(win, ierr)
  if (win /= MPI_WIN_NULL) call fail('win_free')

  ! MPI-IO: each rank writes 3 integers at offset rank*12, reads its neighbour's
  call MPI_File_open(MPI_COMM_WORLD, 'f90_rma_io.dat', ior(MPI_MODE_CREATE, MPI_MODE_RDWR), &
                     MPI_INFO_NULL, fh, ierr)
  if (ierr /= MPI_SUCCESS) call fail('file_open')
  wbuf = (/ rank, rank + 100, rank + 200 /)
  off = rank * 12
  call MPI_File_write_at(fh, off, wbuf, 3, MPI_INTEGER, status, ierr)
  call MPI_Get_count(status, MPI_INTEGER, n, ierr)
  if (n /= 3) call fail('write_at count')
  call MPI_File_sync(fh, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_File_sync(fh, ierr)
  call MPI_File_get_size(fh, fsize, ierr)
  if (fsize /= 12 * np) call fail('file size')
  off = right * 12
  rbuf = -1
  call MPI_File_read_at(fh, off, rbuf, 3, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
  if (rbuf(1) /= right .or. rbuf(3) /= right + 200) call fail('read_at')
  ! a view that skips the first integer of each rank's record
  call MPI_File_set_view(fh, 4_MPI_OFFSET_KIND, MPI_INTEGER, MPI_INTEGER, 'native', MPI_INFO_NULL, ierr)
  rbuf = -1
  call MPI_File_read_at(fh, 0_MPI_OFFSET_KIND, rbuf, 1, MPI_INTEGER, status, ierr)
  if (rbuf(1) /= 100) call fail('view')
  call MPI_File_close(fh, ierr)
  if (fh /= MPI_FILE_NULL) call fail('file_close')
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) call MPI_File_delete('f90_rma_io.dat', MPI_INFO_NULL, ierr)

  call finish('f90_rma_io')

contains
  include 'report.inc'
end program f90_rma_io
