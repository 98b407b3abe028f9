! include 'mpif.h': what legacy Fortran codes call. The MPI-1 routines with
! INTEGER arguments (MPI_KEYVAL_CREATE and its callbacks, MPI_ATTR_PUT / GET
! / DELETE, MPI_ADDRESS, MPI_TYPE_EXTENT / LB / UB, MPI_TYPE_HVECTOR /
! HINDEXED / STRUCT, MPI_ERRHANDLER_CREATE); the profiling interface (this
! program's own MPI_COMM_SIZE calls PMPI_COMM_SIZE); strings without their
! blanks (info keys and values), MPI_INFO_GET leaving VALUE alone for a
! missing key, MPI_INFO_GET_STRING's BUFLEN, MPI_INFO_CREATE_ENV; a
! generalized request's callbacks updating the caller's EXTRA_STATE.
module f77_legacy_state
  implicit none
  integer :: copies = 0, deletes = 0, last_deleted = 0, size_calls = 0
  integer :: handler_calls = 0, handler_code = 0
end module f77_legacy_state

! The profiling interface: this program's MPI_COMM_SIZE takes the place of
! the library's, which it reaches as PMPI_COMM_SIZE.
subroutine mpi_comm_size(comm, size, ierror)
  use f77_legacy_state
  implicit none
  integer :: comm, size, ierror
  size_calls = size_calls + 1
  call pmpi_comm_size(comm, size, ierror)
end subroutine mpi_comm_size

! MPI-1 copy callback: INTEGER extra state and attribute values.
subroutine copy_times_ten(oldcomm, keyval, extra, val_in, val_out, flag, ierr)
  use f77_legacy_state
  implicit none
  integer :: oldcomm, keyval, extra, val_in, val_out, ierr
  logical :: flag
  copies = copies + 1
  val_out = val_in * 10 + extra
  flag = .true.
  ierr = 0
end subroutine copy_times_ten

subroutine delete_note(comm, keyval, val, extra, ierr)
  use f77_legacy_state
  implicit none
  integer :: comm, keyval, val, extra, ierr
  deletes = deletes + 1
  last_deleted = val
  ierr = 0
end subroutine delete_note

subroutine legacy_handler(comm, code)
  use f77_legacy_state
  implicit none
  integer :: comm, code
  handler_calls = handler_calls + 1
  handler_code = code
end subroutine legacy_handler

subroutine greq_query(extra, status, ierr)
  implicit none
  include 'mpif.h'
  integer(kind=MPI_ADDRESS_KIND) :: extra
  integer :: status(MPI_STATUS_SIZE), ierr
  status(MPI_SOURCE) = MPI_UNDEFINED
  status(MPI_TAG) = MPI_UNDEFINED
  call MPI_STATUS_SET_CANCELLED(status, .false., ierr)
  call MPI_STATUS_SET_ELEMENTS(status, MPI_BYTE, 0, ierr)
  ierr = MPI_SUCCESS
end subroutine greq_query

subroutine greq_free(extra, ierr)
  implicit none
  include 'mpif.h'
  integer(kind=MPI_ADDRESS_KIND) :: extra
  integer :: ierr
  extra = extra - 1
  ierr = MPI_SUCCESS
end subroutine greq_free

subroutine greq_cancel(extra, complete, ierr)
  implicit none
  include 'mpif.h'
  integer(kind=MPI_ADDRESS_KIND) :: extra
  logical :: complete
  integer :: ierr
  ierr = MPI_SUCCESS
end subroutine greq_cancel

program f77_legacy
  use f77_legacy_state
  implicit none
  include 'mpif.h'
  external :: copy_times_ten, delete_note, legacy_handler, greq_query, greq_free, greq_cancel
  integer :: ierr, rank, np, errs, key, key2, val, dup, peer, i
  integer :: ia, ib, ext, lb, ub, t_hvec, t_hidx, t_struct, eh, req
  integer :: blens(2), disps(2), types(2), info, info2, nkeys, buflen
  integer(kind=MPI_ADDRESS_KIND) :: aval, extra
  logical :: flag
  integer :: a(10), b(10)
  double precision :: d(3)
  integer :: pair(2)
  character(len=MPI_MAX_INFO_VAL) :: value
  character(len=MPI_MAX_INFO_KEY) :: key_name
  double precision :: t

  errs = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  if (size_calls /= 1 .or. np < 1) call fail('profiling: own MPI_COMM_SIZE not called')
  peer = mod(rank + 1, np)
  t = PMPI_WTIME()
  if (t <= 0d0) call fail('PMPI_WTIME')

  ! ---- MPI_KEYVAL_CREATE / MPI_ATTR_*: INTEGER values, MPI-1 callbacks
  call MPI_KEYVAL_CREATE(copy_times_ten, delete_note, key, 7, ierr)
  if (ierr /= MPI_SUCCESS) call fail('keyval_create')
  call MPI_ATTR_GET(MPI_COMM_WORLD, key, val, flag, ierr)
  if (flag) call fail('attr_get: flag for an attribute not set')
  call MPI_ATTR_PUT(MPI_COMM_WORLD, key, -42, ierr)
  call MPI_ATTR_GET(MPI_COMM_WORLD, key, val, flag, ierr)
  if (.not. flag .or. val /= -42) call fail('attr_get value')
  ! The same attribute through MPI_COMM_GET_ATTR: sign-extended.
  call MPI_COMM_GET_ATTR(MPI_COMM_WORLD, key, aval, flag, ierr)
  if (.not. flag .or. aval /= -42_MPI_ADDRESS_KIND) call fail('comm_get_attr of an MPI_ATTR_PUT value')
  call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
  if (copies /= 1) call fail('copy callback not called once')
  call MPI_ATTR_GET(dup, key, val, flag, ierr)
  if (.not. flag .or. val /= -413) call fail('copied value')
  call MPI_COMM_FREE(dup, ierr)
  if (deletes /= 1 .or. last_deleted /= -413) call fail('delete callback on free')
  call MPI_ATTR_DELETE(MPI_COMM_WORLD, key, ierr)
  if (deletes /= 2 .or. last_deleted /= -42) call fail('delete callback on attr_delete')
  call MPI_KEYVAL_FREE(key, ierr)
  if (key /= MPI_KEYVAL_INVALID) call fail('keyval_free')
  ! MPI_DUP_FN / MPI_NULL_DELETE_FN, and MPI_NULL_COPY_FN: copied / not copied.
  call MPI_KEYVAL_CREATE(MPI_DUP_FN, MPI_NULL_DELETE_FN, key, 0, ierr)
  call MPI_KEYVAL_CREATE(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, key2, 0, ierr)
  call MPI_ATTR_PUT(MPI_COMM_WORLD, key, 123, ierr)
  call MPI_ATTR_PUT(MPI_COMM_WORLD, key2, 456, ierr)
  call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
  call MPI_ATTR_GET(dup, key, val, flag, ierr)
  if (.not. flag .or. val /= 123) call fail('MPI_DUP_FN')
  call MPI_ATTR_GET(dup, key2, val, flag, ierr)
  if (flag) call fail('MPI_NULL_COPY_FN copied')
  call MPI_COMM_FREE(dup, ierr)
  call MPI_ATTR_DELETE(MPI_COMM_WORLD, key, ierr)
  call MPI_ATTR_DELETE(MPI_COMM_WORLD, key2, ierr)
  call MPI_KEYVAL_FREE(key, ierr)
  call MPI_KEYVAL_FREE(key2, ierr)
  ! A predefined attribute: its number.
  call MPI_ATTR_GET(MPI_COMM_WORLD, MPI_TAG_UB, val, flag, ierr)
  if (.not. flag .or. val < 32767) call fail('MPI_TAG_UB through MPI_ATTR_GET')

  ! ---- MPI-1 datatype routines with INTEGER addresses and displacements
  call MPI_ADDRESS(a(1), ia, ierr)
  call MPI_ADDRESS(a(4), ib, ierr)
  if (ib - ia /= 12) call fail('MPI_ADDRESS difference')
  call MPI_TYPE_EXTENT(MPI_DOUBLE_PRECISION, ext, ierr)
  if (ext /= 8) call fail('MPI_TYPE_EXTENT')
  call MPI_TYPE_HVECTOR(3, 1, 12, MPI_INTEGER, t_hvec, ierr)
  call MPI_TYPE_COMMIT(t_hvec, ierr)
  call MPI_TYPE_LB(t_hvec, lb, ierr)
  call MPI_TYPE_UB(t_hvec, ub, ierr)
  call MPI_TYPE_EXTENT(t_hvec, ext, ierr)
  if (lb /= 0 .or. ub /= 28 .or. ext /= 28) call fail('hvector lb/ub/extent')
  blens = (/ 2, 1 /)
  disps = (/ 4, 24 /)
  call MPI_TYPE_HINDEXED(2, blens, disps, MPI_INTEGER, t_hidx, ierr)
  call MPI_TYPE_COMMIT(t_hidx, ierr)
  ! A struct of an INTEGER pair and three DOUBLE PRECISION, from MPI_ADDRESS differences.
  call MPI_ADDRESS(pair, ia, ierr)
  call MPI_ADDRESS(d, ib, ierr)
  blens = (/ 2, 3 /)
  disps = (/ 0, ib - ia /)
  types = (/ MPI_INTEGER, MPI_DOUBLE_PRECISION /)
  call MPI_TYPE_STRUCT(2, blens, disps, types, t_struct, ierr)
  call MPI_TYPE_COMMIT(t_struct, ierr)
  a = (/ (100 * rank + i, i = 1, 10) /)
  b = -1
  call MPI_SENDRECV(a, 1, t_hvec, peer, 1, b, 1, t_hvec, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &
                    MPI_STATUS_IGNORE, ierr)
  i = mod(rank - 1 + np, np)
  if (b(1) /= 100 * i + 1 .or. b(4) /= 100 * i + 4 .or. b(7) /= 100 * i + 7 .or. b(2) /= -1) &
    call fail('hvector data')
  b = -1
  call MPI_SENDRECV(a, 1, t_hidx, peer, 2, b, 1, t_hidx, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &
                    MPI_STATUS_IGNORE, ierr)
  if (b(2) /= 100 * i + 2 .or. b(3) /= 100 * i + 3 .or. b(7) /= 100 * i + 7 .or. b(1) /= -1 &
      .or. b(4) /= -1) call fail('hindexed data')
  pair = (/ rank + 5, -rank - 5 /)
  d = (/ 1.5d0, 2.5d0, 3.5d0 /)
  ! D travels through the datatype, not as an argument: MPI_F_SYNC_REG
  ! tells the compiler that the calls around it read and write it.
  if (np > 1 .and. rank == 0) then
    call MPI_F_SYNC_REG(d)
    call MPI_SEND(pair, 1, t_struct, 1, 3, MPI_COMM_WORLD, ierr)
  else if (np > 1 .and. rank == 1) then
    pair = 0
    d = 0
    call MPI_F_SYNC_REG(d)
    call MPI_RECV(pair, 1, t_struct, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call MPI_F_SYNC_REG(d)
    if (pair(1) /= 5 .or. pair(2) /= -5 .or. d(1) /= 1.5d0 .or. d(3) /= 3.5d0) call fail('struct data')
  end if
  call MPI_TYPE_FREE(t_hvec, ierr)
  call MPI_TYPE_FREE(t_hidx, ierr)
  call MPI_TYPE_FREE(t_struct, ierr)

  ! ---- MPI_ERRHANDLER_CREATE: an MPI-1 handler, called with the error code
  call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
  call MPI_ERRHANDLER_CREATE(legacy_handler, eh, ierr)
  call MPI_COMM_SET_ERRHANDLER(dup, eh, ierr)
  call MPI_SEND(a, -1, MPI_INTEGER, 0, 0, dup, ierr)
  if (ierr /= MPI_ERR_COUNT .or. handler_calls /= 1 .or. handler_code /= MPI_ERR_COUNT) &
    call fail('MPI_ERRHANDLER_CREATE handler')
  call MPI_ERRHANDLER_FREE(eh, ierr)
  call MPI_COMM_FREE(dup, ierr)

  ! ---- strings: blanks around info keys and values are not part of them
  call MPI_INFO_CREATE(info, ierr)
  call MPI_INFO_SET(info, '  padded key ', ' some value  ', ierr)
  call MPI_INFO_GET_NKEYS(info, nkeys, ierr)
  call MPI_INFO_GET_NTHKEY(info, 0, key_name, ierr)
  if (nkeys /= 1 .or. key_name /= 'padded key') call fail('info key blanks')
  value = 'untouched'
  call MPI_INFO_GET(info, 'padded key', MPI_MAX_INFO_VAL, value, flag, ierr)
  if (.not. flag .or. value /= 'some value') call fail('info value blanks')
  value = 'untouched'
  call MPI_INFO_GET(info, 'no such key', MPI_MAX_INFO_VAL, value, flag, ierr)
  if (flag .or. value /= 'untouched') call fail('MPI_INFO_GET overwrote VALUE of a missing key')
  value = 'untouched'
  buflen = 4
  call MPI_INFO_GET_STRING(info, 'padded key', buflen, value, flag, ierr)
  if (.not. flag .or. value /= 'some' .or. buflen /= 10) call fail('MPI_INFO_GET_STRING BUFLEN 4')
  call MPI_INFO_FREE(info, ierr)
  call MPI_INFO_CREATE_ENV(info2, ierr)
  if (ierr /= MPI_SUCCESS .or. info2 == MPI_INFO_NULL) call fail('MPI_INFO_CREATE_ENV')
  ! Without ARGC / ARGV in Fortran: the command line of this process.
  call MPI_INFO_GET(info2, 'command', MPI_MAX_INFO_VAL, value, flag, ierr)
  i = len_trim(value)
  if (.not. flag .or. i < 10) call fail('MPI_INFO_CREATE_ENV: no command')
  if (flag .and. i >= 10) then
    if (value(i - 9:i) /= 'f77_legacy') call fail('MPI_INFO_CREATE_ENV command')
  end if
  call MPI_INFO_FREE(info2, ierr)

  ! ---- generalized request: the callbacks get the caller's EXTRA_STATE
  extra = 1
  call MPI_GREQUEST_START(greq_query, greq_free, greq_cancel, extra, req, ierr)
  call MPI_GREQUEST_COMPLETE(req, ierr)
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  if (extra /= 0) call fail('grequest free callback did not update EXTRA_STATE')

  call finish('f77_legacy')
contains
  include 'report.inc'
end program f77_legacy
