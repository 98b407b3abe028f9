! use mpi: MPI_Register_datarep with Fortran conversion and extent functions,
! and MPI_Session_get_nth_pset.
! - 'axon_f_wide' stores each INTEGER as INTEGER(8) value + 1000: the extent
!   function gives 8, the file is 8 bytes per item (get_type_extent, size),
!   the conversion functions get the caller's datatype, the count and
!   position, and the extra state 42; data comes back exactly through the
!   view; a native view reads the raw values + 1000; get_view names it;
!   registering it again is MPI_ERR_DUP_DATAREP.
! - 'axon_f_null' with MPI_CONVERSION_FN_NULL for both: data stays native.
! - MPI_Session_get_nth_pset: PSET_LEN = 0 gives the name's length, then the
!   name ('mpi://WORLD', 'mpi://SELF'), cut at PSET_LEN and blank-padded;
!   an index out of range is MPI_ERR_ARG; MPI_Session_get_pset_info agrees.
module f90_datarep_cb
  use mpi
  implicit none
  integer :: reads = 0, writes = 0, extents = 0, bad = 0
contains
  subroutine wide_read(userbuf, datatype, count, filebuf, position, extra_state, ierror)
    integer :: userbuf(*), datatype, count, ierror
    integer(kind=8) :: filebuf(*)
    integer(kind=MPI_OFFSET_KIND) :: position
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    integer :: i
    reads = reads + 1
    if (datatype /= MPI_INTEGER .or. extra_state /= 42) bad = bad + 1
    do i = 1, count
      userbuf(position + i) = int(filebuf(i) - 1000)
    end do
    ierror = MPI_SUCCESS
  end subroutine wide_read
  subroutine wide_write(userbuf, datatype, count, filebuf, position, extra_state, ierror)
    integer :: userbuf(*), datatype, count, ierror
    integer(kind=8) :: filebuf(*)
    integer(kind=MPI_OFFSET_KIND) :: position
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    integer :: i
    writes = writes + 1
    if (datatype /= MPI_INTEGER .or. extra_state /= 42) bad = bad + 1
    do i = 1, count
      filebuf(i) = userbuf(position + i) + 1000_8
    end do
    ierror = MPI_SUCCESS
  end subroutine wide_write
  subroutine wide_extent(datatype, extent, extra_state, ierror)
    integer :: datatype, ierror
    integer(kind=MPI_ADDRESS_KIND) :: extent, extra_state
    extents = extents + 1
    ierror = MPI_SUCCESS
    if (extra_state /= 42 .and. extra_state /= 7) bad = bad + 1
    if (datatype /= MPI_INTEGER) then
      ierror = MPI_ERR_TYPE
      return
    end if
    extent = 8
    if (extra_state == 7) extent = 4
  end subroutine wide_extent
end module f90_datarep_cb

program f90_datarep_pset
  use mpi
  use f90_datarep_cb
  implicit none
  integer, parameter :: N = 6
  integer :: ierr, rank, np, errs, fh, i, cls, etype, ftype, session, npsets, plen, info, buflen
  integer :: buf(N), back(N)
  integer(kind=8) :: raw(N)
  integer(kind=MPI_ADDRESS_KIND) :: ext
  integer(kind=MPI_OFFSET_KIND) :: fsize, disp
  character(len=64) :: fname
  character(len=MPI_MAX_DATAREP_STRING) :: rep
  character(len=32) :: pname, value
  logical :: flag, seen_world, seen_self

  errs = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  write (fname, '(a,i0,a,i0)') '/tmp/axon_f90_datarep.', getpid(), '.', rank

  call MPI_Register_datarep('axon_f_wide', wide_read, wide_write, wide_extent, 42_MPI_ADDRESS_KIND, ierr)
  if (ierr /= MPI_SUCCESS) call fail('register_datarep')
  call MPI_Register_datarep('axon_f_wide', wide_read, wide_write, wide_extent, 42_MPI_ADDRESS_KIND, ierr)
  call MPI_Error_class(ierr, cls, i)
  if (cls /= MPI_ERR_DUP_DATAREP) call fail('second registration')

  buf = (/ (10 * rank + i, i = 1, N) /)
  call MPI_File_open(MPI_COMM_SELF, trim(fname), MPI_MODE_CREATE + MPI_MODE_RDWR, MPI_INFO_NULL, fh, ierr)
  if (ierr /= MPI_SUCCESS) call fail('file_open')
  call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_INTEGER, MPI_INTEGER, 'axon_f_wide', MPI_INFO_NULL, ierr)
  if (ierr /= MPI_SUCCESS) call fail('set_view axon_f_wide')
  call MPI_File_get_type_extent(fh, MPI_INTEGER, ext, ierr)
  if (ext /= 8) call fail('get_type_extent')
  call MPI_File_get_view(fh, disp, etype, ftype, rep, ierr)
  if (rep /= 'axon_f_wide') call fail('get_view datarep: ' // trim(rep))
  call MPI_File_write_at(fh, 0_MPI_OFFSET_KIND, buf, N, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
  if (ierr /= MPI_SUCCESS .or. writes < 1) call fail('write through the datarep')
  call MPI_File_get_size(fh, fsize, ierr)
  if (fsize /= 8 * N) call fail('file size')
  back = -1
  call MPI_File_read_at(fh, 0_MPI_OFFSET_KIND, back, N, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
  if (ierr /= MPI_SUCCESS .or. reads < 1 .or. any(back /= buf)) call fail('read through the datarep')
  ! part of it, from an offset: the position argument
  back = -1
  call MPI_File_read_at(fh, 2_MPI_OFFSET_KIND, back(3:), N - 2, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
  if (any(back(3:) /= buf(3:)) .or. any(back(1:2) /= -1)) call fail('read at an offset')
  call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_INTEGER8, MPI_INTEGER8, 'native', MPI_INFO_NULL, ierr)
  call MPI_File_read_at(fh, 0_MPI_OFFSET_KIND, raw, N, MPI_INTEGER8, MPI_STATUS_IGNORE, ierr)
  if (any(raw /= buf + 1000_8)) call fail('raw file contents')
  call MPI_File_close(fh, ierr)
  if (bad /= 0 .or. extents < 1) call fail('conversion callback arguments')

  ! MPI_CONVERSION_FN_NULL: the data is in the native representation
  call MPI_Register_datarep('axon_f_null', MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, wide_extent, &
                            7_MPI_ADDRESS_KIND, ierr)
  if (ierr /= MPI_SUCCESS) call fail('register_datarep with MPI_CONVERSION_FN_NULL')
  i = reads + writes
  call MPI_File_open(MPI_COMM_SELF, trim(fname), MPI_MODE_RDWR + MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, fh, ierr)
  call MPI_File_set_size(fh, 0_MPI_OFFSET_KIND, ierr)
  call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_INTEGER, MPI_INTEGER, 'axon_f_null', MPI_INFO_NULL, ierr)
  if (ierr /= MPI_SUCCESS) call fail('set_view axon_f_null')
  call MPI_File_write_at(fh, 0_MPI_OFFSET_KIND, buf, N, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
  back = -1
  call MPI_File_read_at(fh, 0_MPI_OFFSET_KIND, back, N, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
  if (any(back /= buf)) call fail('read through axon_f_null')
  call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_INTEGER, MPI_INTEGER, 'native', MPI_INFO_NULL, ierr)
  back = -1
  call MPI_File_read_at(fh, 0_MPI_OFFSET_KIND, back, N, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
  if (any(back /= buf)) call fail('axon_f_null data is not native')
  if (reads + writes /= i) call fail('a conversion function ran for MPI_CONVERSION_FN_NULL')
  call MPI_File_close(fh, ierr)

  ! process sets
  call MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, session, ierr)
  call MPI_Session_get_num_psets(session, MPI_INFO_NULL, npsets, ierr)
  if (npsets < 2) call fail('get_num_psets')
  seen_world = .false.
  seen_self = .false.
  do i = 0, npsets - 1
    plen = 0
    call MPI_Session_get_nth_pset(session, MPI_INFO_NULL, i, plen, pname, ierr)
    if (ierr /= MPI_SUCCESS .or. plen <= 0) call fail('get_nth_pset length')
    pname = 'garbage garbage garbage'
    call MPI_Session_get_nth_pset(session, MPI_INFO_NULL, i, plen, pname, ierr)
    if (len_trim(pname) /= plen) call fail('get_nth_pset name length')
    call MPI_Session_get_pset_info(session, pname, info, ierr)
    if (ierr /= MPI_SUCCESS) call fail('get_pset_info of ' // trim(pname))
    buflen = len(value)
    call MPI_Info_get_string(info, 'mpi_size', buflen, value, flag, ierr)
    call MPI_Info_free(info, ierr)
    if (pname == 'mpi://WORLD') then
      seen_world = plen == 11
      read (value, *) cls
      if (cls /= np) call fail('mpi://WORLD size')
      ! cut at PSET_LEN = 6, blank-padded
      pname = 'garbage garbage garbage'
      plen = 6
      call MPI_Session_get_nth_pset(session, MPI_INFO_NULL, i, plen, pname, ierr)
      if (pname /= 'mpi://' .or. plen /= 6) call fail('get_nth_pset cut: ' // pname)
    else if (pname == 'mpi://SELF') then
      seen_self = plen == 10
      if (value /= '1') call fail('mpi://SELF size')
    end if
  end do
  if (.not. seen_world .or. .not. seen_self) call fail('mpi://WORLD and mpi://SELF')
  plen = 0
  call MPI_Session_get_nth_pset(session, MPI_INFO_NULL, npsets, plen, pname, ierr)
  call MPI_Error_class(ierr, cls, i)
  if (cls /= MPI_ERR_ARG) call fail('get_nth_pset out of range')
  call MPI_Session_finalize(session, ierr)

  call finish('f90_datarep_pset')

contains
  include 'report.inc'
end program f90_datarep_pset
