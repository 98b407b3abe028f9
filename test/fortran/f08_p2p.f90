! use mpi_f08: point-to-point with TYPE(MPI_Status) fields and omitted
! IERROR, nonblocking arrays of TYPE(MPI_Request), strided array sections
! (a(1:n:3), b(2:n:2,1)) as send and receive buffers of Send/Recv, Sendrecv,
! Isend/Irecv (a datatype from the strides), 2-D sections with no uniform
! stride (blocking and nonblocking: a datatype describing the section; a
! count short of the section: a contiguous copy), Probe, Get_count.
program f08_p2p
  use mpi_f08
  implicit none
  integer, parameter :: n = 12
  integer :: rank, np, ierr, i, j, cnt, left, right, flagged
  integer :: a(n), b(n, 2), ref(n, 2), m(6, 4), m2(6, 4)
  integer :: sbuf(4), rbuf(4)
  real(kind=8) :: d
  type(MPI_Status) :: st
  type(MPI_Status) :: sts(4)
  type(MPI_Request) :: reqs(4)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  if (ierr /= MPI_SUCCESS) call fail('comm_size ierror')
  right = mod(rank + 1, np)
  left = mod(rank - 1 + np, np)

  ! a scalar and a status
  if (np >= 2) then
    if (rank == 0) then
      d = 2.5d0
      call MPI_Send(d, 1, MPI_DOUBLE_PRECISION, 1, 7, MPI_COMM_WORLD)
      sbuf = [1, 2, 3, 4]
      call MPI_Ssend(sbuf, 3, MPI_INTEGER, 1, 8, MPI_COMM_WORLD, ierr)
    else if (rank == 1) then
      call MPI_Recv(d, 1, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, st)
      if (d /= 2.5d0) call fail('double value')
      if (st%MPI_SOURCE /= 0 .or. st%MPI_TAG /= 7) call fail('status source/tag')
      call MPI_Probe(0, 8, MPI_COMM_WORLD, st)
      call MPI_Get_count(st, MPI_INTEGER, cnt)
      if (cnt /= 3) call fail('get_count')
      rbuf = -1
      call MPI_Recv(rbuf, 4, MPI_INTEGER, st%MPI_SOURCE, st%MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
      if (any(rbuf /= [1, 2, 3, -1])) call fail('ssend data')
    end if
  end if

  ! a ring of Isend/Irecv, Waitall on TYPE(MPI_Request) arrays
  sbuf = [(rank * 10 + i, i = 1, 4)]
  rbuf = -1
  call MPI_Irecv(rbuf(1:2), 2, MPI_INTEGER, left, 1, MPI_COMM_WORLD, reqs(1))
  call MPI_Irecv(rbuf(3:4), 2, MPI_INTEGER, left, 2, MPI_COMM_WORLD, reqs(2))
  call MPI_Isend(sbuf(1:2), 2, MPI_INTEGER, right, 1, MPI_COMM_WORLD, reqs(3))
  call MPI_Isend(sbuf(3:4), 2, MPI_INTEGER, right, 2, MPI_COMM_WORLD, reqs(4), ierr)
  call MPI_Waitall(4, reqs, sts)
  do i = 1, 4
    if (rbuf(i) /= left * 10 + i) call fail('ring data')
    if (reqs(i) /= MPI_REQUEST_NULL) call fail('request not null after waitall')
  end do
  if (sts(1)%MPI_SOURCE /= left .or. sts(2)%MPI_TAG /= 2) call fail('waitall statuses')

  ! strided sections, blocking: a(1:n:3) (4 elements) into b(2:n:2, 1) (first 4 of 6)
  call fill()
  call MPI_Sendrecv(a(1:n:3), 4, MPI_INTEGER, right, 3, b(2:n:2, 1), 4, MPI_INTEGER, left, 3, &
                    MPI_COMM_WORLD, st)
  call expect_b('sendrecv strided')
  call MPI_Get_count(st, MPI_INTEGER, cnt)
  if (cnt /= 4) call fail('sendrecv count')
  if (np >= 2) then
    call fill()
    if (rank == 0) then
      call MPI_Send(a(1:n:3), 4, MPI_INTEGER, 1, 4, MPI_COMM_WORLD)
    else if (rank == 1) then
      call MPI_Recv(b(2:n:2, 1), 4, MPI_INTEGER, 0, 4, MPI_COMM_WORLD, st)
      left = 0
      call expect_b('send/recv strided')
      left = mod(rank - 1 + np, np)
    end if
  end if

  ! strided sections, nonblocking (a datatype made from the stride)
  call fill()
  call MPI_Irecv(b(2:n:2, 1), 4, MPI_INTEGER, left, 5, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(a(1:n:3), 4, MPI_INTEGER, right, 5, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
  call expect_b('isend/irecv strided')

  ! persistent requests on strided sections, started twice (the datatype
  ! made from the stride outlives the init call)
  call MPI_Recv_init(b(2:n:2, 1), 4, MPI_INTEGER, left, 11, MPI_COMM_WORLD, reqs(1))
  call MPI_Send_init(a(1:n:3), 4, MPI_INTEGER, right, 11, MPI_COMM_WORLD, reqs(2))
  do j = 1, 2
    call fill()
    call MPI_Startall(2, reqs(1:2))
    call MPI_Waitall(2, reqs(1:2), MPI_STATUSES_IGNORE)
    call expect_b('persistent strided')
  end do
  call MPI_Request_free(reqs(1))
  call MPI_Request_free(reqs(2))
  if (reqs(1) /= MPI_REQUEST_NULL) call fail('request_free')

  ! a 2-D section with no uniform stride: m(1:5:2, 1:3:2) is 6 elements
  m = reshape([(i, i = 1, 24)], [6, 4]) + 100 * rank
  m2 = 0
  call MPI_Sendrecv(m(1:5:2, 1:3:2), 6, MPI_INTEGER, right, 6, m2(2:6:2, 2:4:2), 6, MPI_INTEGER, &
                    left, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
  flagged = section_errors()
  if (flagged /= 0) call fail('2-D section')

  ! the same 2-D sections nonblocking: one datatype describes each section
  ! (no copy is possible while the request is pending)
  m2 = 0
  call MPI_Irecv(m2(2:6:2, 2:4:2), 6, MPI_INTEGER, left, 7, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(m(1:5:2, 1:3:2), 6, MPI_INTEGER, right, 7, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  if (ierr /= MPI_SUCCESS) call fail('2-D section, nonblocking: error')
  flagged = section_errors()
  if (flagged /= 0) call fail('2-D section, nonblocking')
  ! the first 4 of its 6 elements (a count short of the section): blocking,
  ! through a contiguous copy
  m2 = 0
  call MPI_Sendrecv(m(1:5:2, 1:3:2), 4, MPI_INTEGER, right, 8, m2(2:6:2, 2:4:2), 4, MPI_INTEGER, &
                    left, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
  if (m2(2, 2) /= 1 + 100 * left .or. m2(6, 2) /= 5 + 100 * left .or. m2(2, 4) /= 13 + 100 * left &
      .or. m2(4, 4) /= 0) call fail('2-D section, partial count')

  call MPI_Barrier(MPI_COMM_WORLD)
  call MPI_Finalize()
contains
  ! The elements of m2 that are wrong after m(1:5:2, 1:3:2) of the left
  ! neighbour arrived in m2(2:6:2, 2:4:2), and every other element is 0.
  integer function section_errors()
    section_errors = 0
    do j = 1, 4
      do i = 1, 6
        if (mod(i, 2) == 0 .and. mod(j, 2) == 0) then
          if (m2(i, j) /= (i - 1) + 6 * (j - 2) + 100 * left) section_errors = section_errors + 1
        else
          if (m2(i, j) /= 0) section_errors = section_errors + 1
        end if
      end do
    end do
  end function section_errors

  subroutine fill()
    a = [(1000 * rank + i, i = 1, n)]
    b = -7
    ref = -7
    do i = 1, 4
      ref(2 * i, 1) = 1000 * left + 3 * i - 2
    end do
  end subroutine fill
  subroutine expect_b(what)
    character(len=*), intent(in) :: what
    do i = 1, 4
      ref(2 * i, 1) = 1000 * left + 3 * i - 2
    end do
    if (any(b /= ref)) then
      print *, 'rank', rank, what, ': b =', b(:, 1)
      call fail(what)
    end if
  end subroutine expect_b
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print *, 'f08_p2p rank', rank, 'FAILED: ', what
    stop 1
  end subroutine fail
end program f08_p2p
