! use mpi: the hand-written callbacks not covered by f90_misc: error handlers
! of files, windows and sessions written in Fortran (MPI_File_call_errhandler,
! MPI_Win_call_errhandler, MPI_Session_call_errhandler and a real error from
! MPI_File_read_at on a file opened write-only), and type and window keyvals
! with Fortran copy/delete callbacks (MPI_Type_dup copies, MPI_Type_free and
! MPI_Type_delete_attr delete; MPI_Win_free deletes, window keyvals are not
! copied), MPI_TYPE_DUP_FN / MPI_WIN_NULL_COPY_FN as given constants.
module f90_callbacks_cb
  use mpi
  implicit none
  integer :: file_calls = 0, file_code = 0, file_handle = 0
  integer :: win_calls = 0, win_code = 0, win_handle = 0
  integer :: ses_calls = 0, ses_code = 0
  integer :: type_copies = 0, type_deletes = 0, win_deletes = 0
  integer :: last_type = 0, last_key = 0
  integer(kind=MPI_ADDRESS_KIND) :: last_extra = 0, last_deleted = 0
contains
  subroutine file_handler(fh, code)
    integer :: fh, code
    file_calls = file_calls + 1
    file_code = code
    file_handle = fh
  end subroutine file_handler
  subroutine win_handler(win, code)
    integer :: win, code
    win_calls = win_calls + 1
    win_code = code
    win_handle = win
  end subroutine win_handler
  subroutine session_handler(session, code)
    integer :: session, code
    ses_calls = ses_calls + 1
    ses_code = code
    if (session == MPI_SESSION_NULL) ses_code = -1
  end subroutine session_handler
  subroutine type_copy(oldtype, keyval, extra_state, attr_in, attr_out, flag, ierror)
    integer :: oldtype, keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: extra_state, attr_in, attr_out
    logical :: flag
    type_copies = type_copies + 1
    last_type = oldtype
    last_key = keyval
    last_extra = extra_state
    attr_out = attr_in * 10 + extra_state
    flag = .true.
    ierror = MPI_SUCCESS
  end subroutine type_copy
  subroutine type_delete(datatype, keyval, attr, extra_state, ierror)
    integer :: datatype, keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: attr, extra_state
    type_deletes = type_deletes + 1
    last_key = keyval
    last_deleted = attr
    last_extra = extra_state
    ierror = MPI_SUCCESS
    if (datatype == MPI_DATATYPE_NULL) ierror = MPI_ERR_OTHER
  end subroutine type_delete
  subroutine win_copy(oldwin, keyval, extra_state, attr_in, attr_out, flag, ierror)
    integer :: oldwin, keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: extra_state, attr_in, attr_out
    logical :: flag
    attr_out = attr_in
    flag = .true.
    ierror = MPI_ERR_OTHER   ! never called: windows are not duplicated
    if (oldwin == MPI_WIN_NULL .or. keyval == 0 .or. extra_state < 0) ierror = MPI_ERR_OTHER
  end subroutine win_copy
  subroutine win_delete(win, keyval, attr, extra_state, ierror)
    integer :: win, keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: attr, extra_state
    win_deletes = win_deletes + 1
    last_key = keyval
    last_deleted = attr
    last_extra = extra_state
    ierror = MPI_SUCCESS
    if (win == MPI_WIN_NULL) ierror = MPI_ERR_OTHER
  end subroutine win_delete
end module f90_callbacks_cb

program f90_callbacks
  use mpi
  use f90_callbacks_cb
  implicit none
  integer :: ierr, rank, np, errs, eh, eh2, fh, win, session, tkey, tkey2, wkey, t1, t2, t3, cls, buf(4)
  integer(kind=MPI_ADDRESS_KIND) :: val, wsize
  logical :: flag
  character(len=64) :: fname

  errs = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)

  ! a file error handler written in Fortran
  call MPI_File_create_errhandler(file_handler, eh, ierr)
  if (ierr /= MPI_SUCCESS .or. eh == MPI_ERRHANDLER_NULL) call fail('file_create_errhandler')
  write (fname, '(a,i0,a,i0)') '/tmp/axon_f90_callbacks.', rank, '.', getpid()
  call MPI_File_open(MPI_COMM_SELF, trim(fname), MPI_MODE_CREATE + MPI_MODE_WRONLY + MPI_MODE_DELETE_ON_CLOSE, &
                     MPI_INFO_NULL, fh, ierr)
  if (ierr /= MPI_SUCCESS) call fail('file_open')
  call MPI_File_set_errhandler(fh, eh, ierr)
  call MPI_File_get_errhandler(fh, eh2, ierr)
  if (eh2 /= eh) call fail('file_get_errhandler')
  call MPI_Errhandler_free(eh2, ierr)
  call MPI_Errhandler_free(eh, ierr)
  call MPI_File_call_errhandler(fh, MPI_ERR_OTHER, ierr)
  if (ierr /= MPI_SUCCESS) call fail('file_call_errhandler return')
  if (file_calls /= 1 .or. file_code /= MPI_ERR_OTHER .or. file_handle /= fh) call fail('file handler args')
  ! a real error: reading a write-only file calls the handler, which returns
  call MPI_File_read_at(fh, 0_MPI_OFFSET_KIND, buf, 1, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
  if (file_calls /= 2) call fail('file handler on read of a write-only file')
  call MPI_Error_class(file_code, cls, ierr)
  if (cls /= MPI_ERR_ACCESS .and. cls /= MPI_ERR_AMODE .and. cls /= MPI_ERR_UNSUPPORTED_OPERATION) &
    call fail('file handler code')
  call MPI_File_close(fh, ierr)
  if (fh /= MPI_FILE_NULL) call fail('file_close')

  ! a window error handler and window keyvals (deleted on MPI_Win_free)
  call MPI_Win_create_errhandler(win_handler, eh, ierr)
  call MPI_Win_create_keyval(win_copy, win_delete, wkey, 42_MPI_ADDRESS_KIND, ierr)
  if (ierr /= MPI_SUCCESS) call fail('win_create_keyval')
  wsize = 4 * 4
  call MPI_Win_create(buf, wsize, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call MPI_Win_set_errhandler(win, eh, ierr)
  call MPI_Errhandler_free(eh, ierr)
  call MPI_Win_call_errhandler(win, MPI_ERR_RMA_SYNC, ierr)
  if (win_calls /= 1 .or. win_code /= MPI_ERR_RMA_SYNC .or. win_handle /= win) call fail('win handler args')
  call MPI_Win_set_attr(win, wkey, 7_MPI_ADDRESS_KIND, ierr)
  call MPI_Win_get_attr(win, wkey, val, flag, ierr)
  if (.not. flag .or. val /= 7) call fail('win get_attr')
  call MPI_Win_set_attr(win, wkey, 8_MPI_ADDRESS_KIND, ierr)   ! replaces: deletes 7
  if (win_deletes /= 1 .or. last_deleted /= 7 .or. last_extra /= 42 .or. last_key /= wkey) &
    call fail('win delete on replace')
  call MPI_Win_free(win, ierr)
  if (win_deletes /= 2 .or. last_deleted /= 8) call fail('win delete on free')
  call MPI_Win_free_keyval(wkey, ierr)
  if (wkey /= MPI_KEYVAL_INVALID) call fail('win_free_keyval')

  ! a session error handler
  call MPI_Session_create_errhandler(session_handler, eh, ierr)
  if (ierr /= MPI_SUCCESS) call fail('session_create_errhandler')
  call MPI_Session_init(MPI_INFO_NULL, eh, session, ierr)
  if (ierr /= MPI_SUCCESS) call fail('session_init')
  call MPI_Session_call_errhandler(session, MPI_ERR_OTHER, ierr)
  if (ses_calls /= 1 .or. ses_code /= MPI_ERR_OTHER) call fail('session handler')
  call MPI_Session_finalize(session, ierr)
  call MPI_Errhandler_free(eh, ierr)

  ! type keyvals: copied by MPI_Type_dup, deleted by MPI_Type_free / delete_attr
  call MPI_Type_contiguous(2, MPI_INTEGER, t1, ierr)
  call MPI_Type_create_keyval(type_copy, type_delete, tkey, 3_MPI_ADDRESS_KIND, ierr)
  call MPI_Type_set_attr(t1, tkey, 5_MPI_ADDRESS_KIND, ierr)
  call MPI_Type_dup(t1, t2, ierr)
  if (type_copies /= 1 .or. last_type /= t1 .or. last_key /= tkey .or. last_extra /= 3) call fail('type copy args')
  call MPI_Type_get_attr(t2, tkey, val, flag, ierr)
  if (.not. flag .or. val /= 53) call fail('type copied value')
  call MPI_Type_dup(t2, t3, ierr)
  call MPI_Type_get_attr(t3, tkey, val, flag, ierr)
  if (type_copies /= 2 .or. .not. flag .or. val /= 533) call fail('type copy of a copy')
  call MPI_Type_free(t2, ierr)
  if (type_deletes /= 1 .or. last_deleted /= 53 .or. last_extra /= 3) call fail('type delete on free')
  call MPI_Type_delete_attr(t3, tkey, ierr)
  if (type_deletes /= 2 .or. last_deleted /= 533) call fail('type delete on delete_attr')
  call MPI_Type_get_attr(t3, tkey, val, flag, ierr)
  if (flag) call fail('deleted type attribute found')
  call MPI_Type_free(t3, ierr)
  if (type_deletes /= 2) call fail('delete without attribute')
  ! MPI_TYPE_DUP_FN / MPI_TYPE_NULL_DELETE_FN, MPI_TYPE_NULL_COPY_FN
  call MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, tkey2, 0_MPI_ADDRESS_KIND, ierr)
  call MPI_Type_set_attr(t1, tkey2, 99_MPI_ADDRESS_KIND, ierr)
  call MPI_Type_dup(t1, t2, ierr)
  call MPI_Type_get_attr(t2, tkey2, val, flag, ierr)
  if (.not. flag .or. val /= 99) call fail('MPI_TYPE_DUP_FN')
  if (type_copies /= 3) call fail('Fortran copy on the second dup')
  call MPI_Type_free(t2, ierr)
  if (type_deletes /= 3 .or. last_deleted /= 53) call fail('type delete of the second dup')
  call MPI_Type_free_keyval(tkey2, ierr)
  call MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, tkey2, 0_MPI_ADDRESS_KIND, ierr)
  call MPI_Type_set_attr(t1, tkey2, 1_MPI_ADDRESS_KIND, ierr)
  call MPI_Type_dup(t1, t2, ierr)
  call MPI_Type_get_attr(t2, tkey2, val, flag, ierr)
  if (flag) call fail('MPI_TYPE_NULL_COPY_FN copied')
  if (type_copies /= 4) call fail('Fortran copy on the third dup')
  call MPI_Type_free(t2, ierr)
  if (type_deletes /= 4) call fail('type delete of the third dup')
  call MPI_Type_free_keyval(tkey2, ierr)
  call MPI_Type_free(t1, ierr)
  if (type_deletes /= 5 .or. last_deleted /= 5) call fail('type delete of the original')
  call MPI_Type_free_keyval(tkey, ierr)
  if (tkey /= MPI_KEYVAL_INVALID) call fail('type_free_keyval')

  call finish('f90_callbacks')

contains
  include 'report.inc'
end program f90_callbacks
