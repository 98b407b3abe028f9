#!/usr/bin/env python3
"""Generate Axon's `use mpi_f08` binding from src/binding/mpi_api.txt and the
ABI constants table (the same data as gen_fortran.py, which it imports).

    gen_f08.py --api mpi_api.txt --constants constants.txt --outdir DIR

writes into DIR:
  mpi_f08_types.f90  module mpi_f08_types: handle types, MPI_Status, the
                     constants, the special objects, the callback interfaces
  mpi_f08.f90        module mpi_f08: the generic interfaces (MPI_Send ->
                     MPI_Send_f08), == and /= between handles
  mpi_f08_impl.f90   the MPI_<name>_f08 procedures (in libmpifort_abi): they
                     call the `use mpi` entry points (mpi_<name>_), whose
                     argument conventions TYPE(MPI_Comm) etc. share
  mpi_f08_gen.c      axon_f08_<name>: the C side of routines with choice
                     buffers, which arrive as descriptors (CFI_cdesc_t)
  f08_symbols.txt    the entry points of the binding, one a line
Routines are those of `use mpi` (gen_fortran.py; fortran=no and f08=no
functions are left out), and the large-count variants that Fortran can tell
from the int forms (gen_fortran.large_variants) as further specific
procedures MPI_<name>_c_f08 of each generic. See docs/fortran.md.
"""
import argparse
import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpi_api  # noqa: E402
import gen_fortran as gf  # noqa: E402

HANDLES = ["Comm", "Datatype", "Group", "Request", "File", "Win", "Op", "Info",
           "Errhandler", "Message", "Session"]
C_TYPES = {("MPI_" + h): h for h in HANDLES}
CALLBACKS = ["MPI_User_function", "MPI_Comm_copy_attr_function", "MPI_Comm_delete_attr_function",
             "MPI_Type_copy_attr_function", "MPI_Type_delete_attr_function",
             "MPI_Win_copy_attr_function", "MPI_Win_delete_attr_function",
             "MPI_Comm_errhandler_function", "MPI_File_errhandler_function",
             "MPI_Win_errhandler_function", "MPI_Session_errhandler_function",
             "MPI_Grequest_query_function", "MPI_Grequest_free_function",
             "MPI_Grequest_cancel_function", "MPI_Datarep_conversion_function",
             "MPI_Datarep_extent_function"]
KINDS = ["MPI_ADDRESS_KIND", "MPI_OFFSET_KIND", "MPI_COUNT_KIND", "MPI_STATUS_SIZE"]
USE_TYPES = ("use mpi_f08_types, only: " + ", ".join(KINDS + ["MPI_" + h for h in HANDLES]
                                                      + ["MPI_Status"] + CALLBACKS))
PREDEF_CALLBACKS = [("MPI_Comm_copy_attr_function", ["MPI_COMM_NULL_COPY_FN", "MPI_COMM_DUP_FN"]),
                    ("MPI_Comm_delete_attr_function", ["MPI_COMM_NULL_DELETE_FN"]),
                    ("MPI_Type_copy_attr_function", ["MPI_TYPE_NULL_COPY_FN", "MPI_TYPE_DUP_FN"]),
                    ("MPI_Type_delete_attr_function", ["MPI_TYPE_NULL_DELETE_FN"]),
                    ("MPI_Win_copy_attr_function", ["MPI_WIN_NULL_COPY_FN", "MPI_WIN_DUP_FN"]),
                    ("MPI_Win_delete_attr_function", ["MPI_WIN_NULL_DELETE_FN"]),
                    ("MPI_Datarep_conversion_function", ["MPI_CONVERSION_FN_NULL"])]

# Buffers whose address is all that matters, buffers the library keeps using
# after the call (they must be contiguous), see src/fortran/f08_util.h.
ADDR_ONLY = {"MPI_Get_address", "MPI_Free_mem", "MPI_Buffer_detach", "MPI_Comm_detach_buffer",
             "MPI_Session_detach_buffer", "MPI_Win_detach"}
KEPT = {"MPI_Buffer_attach", "MPI_Comm_attach_buffer", "MPI_Session_attach_buffer",
        "MPI_Win_create", "MPI_Win_attach"}

ABSTRACT = """\
  abstract interface
    subroutine MPI_User_function(invec, inoutvec, len, datatype)
      import :: c_ptr, MPI_Datatype
      type(c_ptr), value :: invec, inoutvec
      integer :: len
      type(MPI_Datatype) :: datatype
    end subroutine
@ATTR@
    subroutine MPI_Comm_errhandler_function(comm, error_code)
      import :: MPI_Comm
      type(MPI_Comm) :: comm
      integer :: error_code
    end subroutine
    subroutine MPI_File_errhandler_function(file, error_code)
      import :: MPI_File
      type(MPI_File) :: file
      integer :: error_code
    end subroutine
    subroutine MPI_Win_errhandler_function(win, error_code)
      import :: MPI_Win
      type(MPI_Win) :: win
      integer :: error_code
    end subroutine
    subroutine MPI_Session_errhandler_function(session, error_code)
      import :: MPI_Session
      type(MPI_Session) :: session
      integer :: error_code
    end subroutine
    subroutine MPI_Grequest_query_function(extra_state, status, ierror)
      import :: MPI_ADDRESS_KIND, MPI_Status
      integer(kind=MPI_ADDRESS_KIND) :: extra_state
      type(MPI_Status) :: status
      integer :: ierror
    end subroutine
    subroutine MPI_Grequest_free_function(extra_state, ierror)
      import :: MPI_ADDRESS_KIND
      integer(kind=MPI_ADDRESS_KIND) :: extra_state
      integer :: ierror
    end subroutine
    subroutine MPI_Grequest_cancel_function(extra_state, complete, ierror)
      import :: MPI_ADDRESS_KIND
      integer(kind=MPI_ADDRESS_KIND) :: extra_state
      logical :: complete
      integer :: ierror
    end subroutine
    subroutine MPI_Datarep_conversion_function(userbuf, datatype, count, filebuf, position, &
        extra_state, ierror)
      import :: c_ptr, MPI_Datatype, MPI_OFFSET_KIND, MPI_ADDRESS_KIND
      type(c_ptr), value :: userbuf, filebuf
      type(MPI_Datatype) :: datatype
      integer :: count, ierror
      integer(kind=MPI_OFFSET_KIND) :: position
      integer(kind=MPI_ADDRESS_KIND) :: extra_state
    end subroutine
    subroutine MPI_Datarep_extent_function(datatype, extent, extra_state, ierror)
      import :: MPI_Datatype, MPI_ADDRESS_KIND
      type(MPI_Datatype) :: datatype
      integer(kind=MPI_ADDRESS_KIND) :: extent, extra_state
      integer :: ierror
    end subroutine
  end interface
"""

ATTR_TEMPLATE = """\
    subroutine MPI_{K}_copy_attr_function(old{o}, {o}_keyval, extra_state, attribute_val_in, &
        attribute_val_out, flag, ierror)
      import :: MPI_{T}, MPI_ADDRESS_KIND
      type(MPI_{T}) :: old{o}
      integer :: {o}_keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
      logical :: flag
    end subroutine
    subroutine MPI_{K}_delete_attr_function({o}, {o}_keyval, attribute_val, extra_state, ierror)
      import :: MPI_{T}, MPI_ADDRESS_KIND
      type(MPI_{T}) :: {o}
      integer :: {o}_keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
    end subroutine"""


def abstract_interfaces():
    attr = "\n".join(ATTR_TEMPLATE.format(K=k, T=t, o=o) for k, t, o in
                     [("Comm", "Comm", "comm"), ("Type", "Datatype", "type"), ("Win", "Win", "win")])
    return ABSTRACT.replace("@ATTR@", attr)


# ---------------------------------------------------------------- classification
def nonblocking(f):
    return any(p.kind == "handle:Request" and p.dir == "out" for p in f.params)


def rma(f):
    return not f.name.startswith("MPI_Win_") and any(p.kind == "handle:Win" for p in f.params)


def split_io(f):
    return f.name.endswith("_begin") or f.name.endswith("_end")


def asynchronous(f):
    return nonblocking(f) or rma(f) or split_io(f) or f.name in KEPT


def buf_mode(f):
    if f.name in ADDR_ONLY:
        return "F08_BUFFER_ADDRESS"
    if f.name in KEPT or rma(f) or split_io(f):
        return "F08_BUFFER_CONTIGUOUS"
    return "F08_BUFFER_NONBLOCKING" if nonblocking(f) else "F08_BUFFER_BLOCKING"


def pairing(f, i):
    """(count, datatype) parameters that describe choice parameter I alone, or None."""
    ps = f.params
    if any(p.kind == "handle:Op" for p in ps):
        return None  # reductions: the datatype is shared and must stay predefined
    if i + 2 < len(ps) and ps[i + 1].kind in ("count", "mpi_count") and ps[i + 2].kind == "handle:Datatype":
        return ps[i + 1].name, ps[i + 2].name
    return None


def has_choice(f):
    return any(p.kind == "choice" for p in f.params)


# ---------------------------------------------------------------- declarations
SCALAR = dict(gf.SCALAR_F)


def intent(p):
    return {"in": ", intent(in)", "out": ", intent(out)", "inout": ", intent(inout)"}[p.dir]


def f08_decl(p, f):
    """Declaration lines of one dummy argument of MPI_<name>_f08."""
    k, n, el = p.kind, p.name, p.elem()
    it = intent(p)
    asy = ", asynchronous" if asynchronous(f) else ""
    if k == "choice":
        return [f"type(*), dimension(..){', intent(in)' if p.dir == 'in' else ''}{asy} :: {n}"]
    if k == "address":
        return [f"type(c_ptr){it} :: {n}"]
    if k.startswith("handle:"):
        return [f"type(MPI_{k[7:]}){it}{asy if k == 'handle:Request' else ''} :: {n}"]
    if k in SCALAR:
        return [f"{SCALAR[k]}{it} :: {n}"]
    if k == "status":
        return [f"type(MPI_Status){it} :: {n}"]
    if k == "string":
        return [f"character(len=*){it} :: {n}"]
    if k.startswith("callback:"):
        return [f"procedure({k[9:]}) :: {n}"]
    if k in ("argv", "array:string"):
        return [f"character(len=*){it} :: {n}(*)"]
    if k == "array:argv":
        return [f"character(len=*){it} :: {n}(count, *)"]
    if el == "status":
        return [f"type(MPI_Status){it} :: {n}(*)"]
    if el and el.startswith("handle:"):
        return [f"type(MPI_{el[7:]}){it} :: {n}(*)"]
    if el in SCALAR:
        dims = "(3, *)" if p.attrs.get("len") == "n*3" else "(*)"
        return [f"{SCALAR[el]}{it} :: {n}{dims}"]
    raise gf.Unsupported(f"{f.name}.{n}: kind {k}")


def needs_c_ptr(f):
    return any(p.kind == "address" for p in f.params)


def signature(f, prefix=""):
    """(head, tail, result declaration or None, ierror?) of MPI_<name>_f08
    (PREFIX "P": of PMPI_<name>_f08)."""
    params = gf.fortran_params(f)
    names = [p.name for p in params]
    spec = prefix + f.name + "_f08"
    ierr = f.ret == "int" and f.flags.get("fortran_ierror") != "no"
    if f.ret == "int":
        if ierr:
            names.append("ierror")
        return (f"subroutine {spec}({', '.join(names)})", f"end subroutine {spec}", None, ierr)
    t = "double precision" if f.ret == "double" else "integer(kind=MPI_ADDRESS_KIND)"
    return (f"function {spec}({', '.join(names)}) result(res)", f"end function {spec}", f"{t} :: res", False)


def interface_body(f, indent, prefix=""):
    head, tail, res, ierr = signature(f, prefix)
    L = [head]
    if needs_c_ptr(f):
        L.append("  use, intrinsic :: iso_c_binding, only: c_ptr")
    L.append("  import")
    L.append("  implicit none")
    for p in gf.fortran_params(f):
        L += ["  " + d for d in f08_decl(p, f)]
    if res:
        L.append("  " + res)
    if ierr:
        L.append("  integer, optional, intent(out) :: ierror")
    L.append(tail)
    return [indent + x for x in L]


# ---------------------------------------------------------------- the modules
def write_types(path, constants):
    L = ["! mpi_f08_types.f90 -- the types and constants of `use mpi_f08` (Axon MPI).",
         "! Generated by src/binding/gen_f08.py: do not edit.",
         "module mpi_f08_types",
         "  use, intrinsic :: iso_c_binding, only: c_ptr, c_int",
         "  implicit none",
         "  private :: c_ptr, c_int"]
    for h in HANDLES:
        L += [f"  type, bind(C) :: MPI_{h}", "    integer(c_int) :: MPI_VAL", f"  end type MPI_{h}"]
    L += ["  type, bind(C) :: MPI_Status",
          "    integer(c_int) :: MPI_SOURCE, MPI_TAG, MPI_ERROR",
          "    integer(c_int), private :: MPI_internal(5)",
          "  end type MPI_Status"]
    for t, name, value in gf.constant_decls([])[:8]:
        L.append(f"  {t}, parameter :: {name} = {value}")
    for name, value, ctype in constants:
        if ctype in C_TYPES:
            L.append(f"  type(MPI_{C_TYPES[ctype]}), parameter :: {name} = MPI_{C_TYPES[ctype]}({value})")
        elif ctype == "MPI_Offset":
            L.append(f"  integer(kind=MPI_OFFSET_KIND), parameter :: {name} = {value}")
        else:
            L.append(f"  integer, parameter :: {name} = {value}")
    L.append("  logical, parameter :: MPI_SUBARRAYS_SUPPORTED = .false.")
    L.append("  logical, parameter :: MPI_ASYNC_PROTECTS_NONBLOCKING = .false.")
    L.append(abstract_interfaces().rstrip("\n"))
    for iface, names in PREDEF_CALLBACKS:
        L.append(f"  procedure({iface}) :: {', '.join(names)}")
    L.append("end module mpi_f08_types")
    with open(path, "w") as fh:
        fh.write("\n".join(x for line in L for x in line.split("\n")) + "\n")


def write_module(path, funcs, large):
    L = ["! mpi_f08.f90 -- the `mpi_f08` module of Axon MPI (use mpi_f08).",
         "! Generated by src/binding/gen_f08.py: do not edit.",
         "module mpi_f08",
         "  use mpi_f08_types",
         "  implicit none"]
    # The special objects (here, not in mpi_f08_types: every object using a
    # module gets its COMMON blocks, and libmpifort_abi must not): the storage of `use mpi` / mpif.h (COMMON blocks),
    # so the C wrappers recognise their addresses.
    for name, dims, ftype, common in gf.SPECIAL_VARS:
        if name == "MPI_STATUS_IGNORE":
            ftype, dims = "type(MPI_Status)", ""
        elif name == "MPI_STATUSES_IGNORE":
            ftype, dims = "type(MPI_Status)", "(1)"
        L.append(f"  {ftype} :: {name}{dims}")
        L.append(f"  common /{common}/ {name}")
        if common in gf.BIND_NAMES:
            L.append(f"  bind(C, name='{gf.BIND_NAMES[common]}') :: /{common}/")
    for op, fn in (("==", "eq"), ("/=", "ne")):
        L.append(f"  interface operator({op})")
        for h in HANDLES:
            L += [f"    logical function mpi_f08_{fn}_{h.lower()}(a, b)",
                  f"      import :: MPI_{h}",
                  f"      type(MPI_{h}), intent(in) :: a, b",
                  f"    end function mpi_f08_{fn}_{h.lower()}"]
        L.append("  end interface")
    for name in ("MPI_Status_f2f08", "MPI_Status_f082f"):
        a, b = ("f_status", "f08_status") if name.endswith("f2f08") else ("f08_status", "f_status")
        decl = {"f_status": "integer{} :: f_status(MPI_STATUS_SIZE)",
                "f08_status": "type(MPI_Status){} :: f08_status"}
        L += [f"  interface {name}", f"    subroutine {name}_f08({a}, {b}, ierror)", "      import",
              "      " + decl[a].format(", intent(in)"), "      " + decl[b].format(", intent(out)"),
              "      integer, optional, intent(out) :: ierror", f"    end subroutine {name}_f08",
              "  end interface"]
    L += ["  interface",
          "    subroutine MPI_Sizeof(x, size, ierror) bind(C, name='axon_f_sizeof')",
          "      type(*), dimension(..) :: x",
          "      integer :: size",
          "      integer, optional :: ierror",
          "    end subroutine MPI_Sizeof",
          "    subroutine MPI_F_sync_reg(buf)",
          "      type(*), dimension(..), asynchronous :: buf",
          "    end subroutine MPI_F_sync_reg",
          "  end interface"]
    # MPI_<name> and, for profiling libraries, PMPI_<name>.
    for f in funcs:
        for prefix in ("", "P"):
            L.append(f"  interface {prefix}{f.name}")
            L += interface_body(f, "    ", prefix)
            if f.name in large:
                L += interface_body(large[f.name], "    ", prefix)
            L.append(f"  end interface {prefix}{f.name}")
    L.append("end module mpi_f08")
    with open(path, "w") as fh:
        fh.write("\n".join(x for line in L for x in gf.wrap_free(line)) + "\n")


# ---------------------------------------------------------------- the procedures
def c_kinds(decl):
    """A declaration of the BIND(C) side with C kinds: a default INTEGER is
    MPI_Fint (a C int), MPI_ADDRESS_KIND MPI_Aint (intptr_t), MPI_OFFSET_KIND
    and MPI_COUNT_KIND MPI_Offset / MPI_Count (int64_t); the same kinds as
    the Fortran side's, which gfortran cannot tell are interoperable."""
    decl = re.sub(r"^integer\(kind=MPI_ADDRESS_KIND\)", "integer(c_intptr_t)", decl)
    decl = re.sub(r"^integer\(kind=MPI_(OFFSET|COUNT)_KIND\)", "integer(c_int64_t)", decl)
    return re.sub(r"^integer(?=[ ,])", "integer(c_int)", decl)


def impl_proc(f):
    """PMPI_<name>_f08: the procedure; MPI_<name>_f08 is an alias of it
    (f08_aliases.ld), so a profiling library's MPI_<name>_f08 takes its place
    and reaches it as PMPI_<name>_f08. It calls the `use mpi` entry point by
    its profiling name, pmpi_<name>_."""
    head, tail, res, ierr = signature(f, "P")
    params = gf.fortran_params(f)
    L = [head, "  " + USE_TYPES]
    if needs_c_ptr(f):
        L.append("  use, intrinsic :: iso_c_binding, only: c_ptr")
    L.append("  implicit none")
    for p in params:
        L += ["  " + d for d in f08_decl(p, f)]
    if res:
        L.append("  " + res)
    if ierr:
        L.append("  integer, optional, intent(out) :: ierror")
    cname = "p" + f.name.lower()
    if ierr:
        L.append("  integer :: ierror_c")
    if has_choice(f):
        # The C side (mpi_f08_gen.c) takes the descriptors.
        L.append("  interface")
        L.append(f"    subroutine c_impl({', '.join([p.name for p in params] + ['ierror'] + [p.name + '_len' for p in params if p.kind == 'string'])}) &")
        L.append(f"        bind(C, name='axon_f08_{f.name.lower()[4:]}')")
        L.append("      use, intrinsic :: iso_c_binding, only: c_char, c_int, c_intptr_t, c_int64_t, c_size_t")
        L.append("      import")
        L.append("      implicit none")
        for p in params:
            if p.kind == "string":
                L.append(f"      character(kind=c_char) :: {p.name}(*)")
            else:
                # a default INTEGER is a C int here (MPI_Fint)
                L += ["      " + c_kinds(d) for d in f08_decl(p, f)]
        L.append("      integer(c_int) :: ierror")
        for p in params:
            if p.kind == "string":
                L.append(f"      integer(c_size_t), value :: {p.name}_len")
        L.append("    end subroutine c_impl")
        L.append("  end interface")
        args = [p.name for p in params] + ["ierror_c"] + [f"len({p.name}, kind=8)" for p in params
                                                         if p.kind == "string"]
        L.append(f"  call c_impl({', '.join(args)})")
    else:
        args = [p.name for p in params]
        if f.ret == "int":
            L.append(f"  external :: {cname}")
            if f.flags.get("fortran_ierror") != "no":
                args.append("ierror_c")
            L.append(f"  call {cname}({', '.join(args)})")
        else:
            t = "double precision" if f.ret == "double" else "integer(kind=MPI_ADDRESS_KIND)"
            L.append(f"  {t}, external :: {cname}")
            L.append(f"  res = {cname}({', '.join(args)})")
    if ierr:
        L.append("  if (present(ierror)) ierror = ierror_c")
    L.append(tail)
    return L


def write_impl(path, funcs):
    L = ["! mpi_f08_impl.f90 -- the procedures of `use mpi_f08` (Axon MPI), in libmpifort_abi.",
         "! Generated by src/binding/gen_f08.py: do not edit. Each calls the `use mpi`",
         "! entry point (an external, implicit interface: TYPE(MPI_Comm) and the other",
         "! handle types are passed as the INTEGER they hold), or for routines with",
         "! choice buffers its C side axon_f08_<name> (mpi_f08_gen.c)."]
    for h in HANDLES:
        for fn, op in (("eq", "=="), ("ne", "/=")):
            L += [f"logical function mpi_f08_{fn}_{h.lower()}(a, b)",
                  f"  use mpi_f08_types, only: MPI_{h}", "  implicit none",
                  f"  type(MPI_{h}), intent(in) :: a, b",
                  f"  mpi_f08_{fn}_{h.lower()} = a%MPI_VAL {op} b%MPI_VAL",
                  f"end function mpi_f08_{fn}_{h.lower()}"]
    L += ["subroutine MPI_Status_f2f08_f08(f_status, f08_status, ierror)",
          "  use mpi_f08_types, only: MPI_Status, MPI_STATUS_SIZE", "  implicit none",
          "  integer, intent(in) :: f_status(MPI_STATUS_SIZE)",
          "  type(MPI_Status), intent(out) :: f08_status",
          "  integer, optional, intent(out) :: ierror",
          "  f08_status = transfer(f_status, f08_status)",
          "  if (present(ierror)) ierror = 0",
          "end subroutine MPI_Status_f2f08_f08",
          "subroutine MPI_Status_f082f_f08(f08_status, f_status, ierror)",
          "  use mpi_f08_types, only: MPI_Status, MPI_STATUS_SIZE", "  implicit none",
          "  type(MPI_Status), intent(in) :: f08_status",
          "  integer, intent(out) :: f_status(MPI_STATUS_SIZE)",
          "  integer, optional, intent(out) :: ierror",
          "  f_status = transfer(f08_status, f_status, MPI_STATUS_SIZE)",
          "  if (present(ierror)) ierror = 0",
          "end subroutine MPI_Status_f082f_f08"]
    for f in funcs:
        L += impl_proc(f)
    with open(path, "w") as fh:
        fh.write("\n".join(x for line in L for x in gf.wrap_free(line)) + "\n")


# ---------------------------------------------------------------- C side
def c_side(f):
    proto = gf.c_wrapper(f).split("\n", 1)[0]
    m = re.match(r"^AXON_F_ENTRY\((\w+), \((.*)\)\)$", proto)
    if not m:
        raise gf.Unsupported(f"{f.name}: choice buffers in a function without IERROR")
    cfn, sig = "p" + m.group(1), m.group(2).split(", ")
    choice = {p.name: i for i, p in enumerate(f.params) if p.kind == "choice"}
    nsig, args = [], []
    for s in sig:
        name = re.split(r"[ *]", s)[-1]
        args.append(name)
        nsig.append(f"CFI_cdesc_t *{name}" if name in choice else s)
    repl = {}
    pre, post = [], []
    for n, i in choice.items():
        pr = pairing(f, i)
        pre.append(f"axon_f08_buf b_{n};")
        if pr:
            large = f.param(pr[0]).kind == "mpi_count"
            repl[pr[0]] = f"b_{n}.countcp" if large else f"b_{n}.countp"
            repl[pr[1]] = f"b_{n}.typep"
        repl[n] = f"b_{n}.ptr"
    # Errors of the buffer go to the error handler of the routine's object.
    obj = next((p for p in f.params if p.kind in ("handle:Comm", "handle:Win", "handle:File")
                and p.dir == "in"), None)
    kind = {"handle:Comm": 0, "handle:Win": 1, "handle:File": 2}[obj.kind] if obj else 3
    handle = f"*{obj.name}" if obj else "0"
    steps = []
    done = []
    for n, i in choice.items():
        pr = pairing(f, i)
        if pr:
            large = f.param(pr[0]).kind == "mpi_count"
            cnt = f"NULL, {pr[0]}" if large else f"{pr[0]}, NULL"
            typ = pr[1]
        else:
            cnt, typ = "NULL, NULL", "NULL"
        p = f.params[i]
        cleanup = "".join(f" axon_f08_buf_end(&b_{d});" for d in done)
        steps.append(f"if ((*ierror = axon_f08_buf_begin(&b_{n}, {n}, {cnt}, {typ}, {buf_mode(f)}, "
                     f"{0 if p.dir == 'in' else 1})) != MPI_SUCCESS) {{{cleanup} "
                     f"*ierror = axon_f08_raise({kind}, {handle}, *ierror); return; }}")
        done.append(n)
        post.append(f"axon_f08_buf_end(&b_{n});")
    cargs = [repl.get(a, a) for a in args]
    name = "axon_f08_" + f.name.lower()[4:]
    s = ", ".join(nsig)
    body = [f"AXON_F_API void {cfn}({m.group(2)});",
            f"void {name}({s});", f"void {name}({s})", "{"]
    body += ["    " + x for x in pre + steps]
    body.append(f"    {cfn}({', '.join(cargs)});")
    body += ["    " + x for x in post]
    body.append("}")
    return "\n".join(body) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--api", required=True)
    ap.add_argument("--constants", required=True)
    ap.add_argument("--outdir", required=True)
    a = ap.parse_args()
    all_funcs = mpi_api.load(a.api)
    funcs = [f for f in all_funcs if f.exported and "large_of" not in f.flags
             and f.flags.get("fortran") != "no" and f.flags.get("f08") != "no"]
    # The large-count forms: further specific procedures of the generics.
    large = {f.flags["large_of"]: f for f in gf.large_variants(all_funcs)}
    constants = gf.read_constants(a.constants)
    cside, errors = [], []
    for f in funcs + list(large.values()):
        try:
            for p in gf.fortran_params(f):
                f08_decl(p, f)
            if has_choice(f):
                cside.append(c_side(f))
        except gf.Unsupported as e:
            errors.append(str(e))
    if errors:
        sys.exit("gen_f08.py: functions the generator cannot convert:\n  " + "\n  ".join(errors))
    os.makedirs(a.outdir, exist_ok=True)
    write_types(os.path.join(a.outdir, "mpi_f08_types.f90"), constants)
    write_module(os.path.join(a.outdir, "mpi_f08.f90"), funcs, large)
    write_impl(os.path.join(a.outdir, "mpi_f08_impl.f90"), funcs + list(large.values()))
    with open(os.path.join(a.outdir, "mpi_f08_gen.c"), "w") as fh:
        fh.write("/* The C side of the `use mpi_f08` routines with choice buffers: generated by\n"
                 " * src/binding/gen_f08.py from src/binding/mpi_api.txt. Do not edit. */\n"
                 "#include \"fortran/f08_util.h\"\n\n")
        fh.write("\n".join(cside))
    syms = [f"mpi_f08_{fn}_{h.lower()}_" for fn in ("eq", "ne") for h in HANDLES]
    syms += ["mpi_status_f2f08_f08_", "mpi_status_f082f_f08_"]
    procs = funcs + list(large.values())
    syms += [f.name.lower() + "_f08_" for f in procs] + ["p" + f.name.lower() + "_f08_" for f in procs]
    # MPI_<name>_f08 is PMPI_<name>_f08 (a linker script of symbol
    # assignments: Fortran has no aliases; an executable's or an earlier
    # library's MPI_<name>_f08 still takes its place).
    with open(os.path.join(a.outdir, "f08_aliases.ld"), "w") as fh:
        fh.write("/* Generated by src/binding/gen_f08.py: MPI_<name>_f08 is PMPI_<name>_f08. */\n")
        for f in procs:
            fh.write(f"{f.name.lower()}_f08_ = p{f.name.lower()}_f08_;\n")
    with open(os.path.join(a.outdir, "f08_symbols.txt"), "w") as fh:
        fh.write("\n".join(syms) + "\n")


if __name__ == "__main__":
    main()
