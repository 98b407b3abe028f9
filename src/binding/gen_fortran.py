#!/usr/bin/env python3
"""Generate Axon's Fortran bindings (mpif.h, the `mpi` module, C wrappers)
from src/binding/mpi_api.txt and the ABI constants table.

    gen_fortran.py --api mpi_api.txt --constants constants.txt --outdir DIR

writes DIR/mpif.h, DIR/mpi.f90, DIR/mpi_fortran_gen.c and DIR/fortran_symbols.txt
(one Fortran entry point a line, the functions libmpifort_abi provides).
Functions flagged fortran=special get an interface here and a hand-written
wrapper in src/fortran/special.cpp; fortran=no and large-count variants get
nothing. A function whose parameters the generator cannot convert and that
is not flagged is an error: nothing is exported that does the wrong thing.
See docs/fortran.md.
"""
import argparse
import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpi_api  # noqa: E402

HANDLE_CONV = {"Comm": "Comm", "Datatype": "Type", "Group": "Group", "Request": "Request",
               "File": "File", "Win": "Win", "Op": "Op", "Info": "Info",
               "Errhandler": "Errhandler", "Message": "Message", "Session": "Session"}
C_HANDLE = {k: ("MPI_Datatype" if k == "Datatype" else "MPI_" + k) for k in HANDLE_CONV}
SCALAR_F = {"count": "integer", "int": "integer", "logical": "logical",
            "aint": "integer(kind=MPI_ADDRESS_KIND)", "offset": "integer(kind=MPI_OFFSET_KIND)",
            "mpi_count": "integer(kind=MPI_COUNT_KIND)", "double": "double precision",
            "attr_val": "integer(kind=MPI_ADDRESS_KIND)", "extra_state": "integer(kind=MPI_ADDRESS_KIND)"}
SCALAR_C = {"count": "MPI_Fint", "int": "MPI_Fint", "logical": "MPI_Fint", "aint": "MPI_Aint",
            "offset": "MPI_Offset", "mpi_count": "MPI_Count", "double": "double",
            "attr_val": "MPI_Aint", "extra_state": "MPI_Aint"}
DROPPED = {"argc", "argv_ptr", "varargs"}
STRINGISH = {"string", "array:string", "argv", "array:argv"}
# The C types of the Fortran constants other than plain integers
F_SKIP_CTYPES = {"void*", "int*", "char**", "char***", "MPI_Status*"}


class Unsupported(Exception):
    pass


# ---------------------------------------------------------------- constants
def read_constants(path):
    out = []
    for line in open(path):
        line = line.split("#", 1)[0].split()
        if len(line) < 3:
            continue
        name, value, ctype = line[0], line[1], line[2]
        if name.startswith("MPI_T_") or name.startswith("MPI_F_") or ctype in F_SKIP_CTYPES:
            continue
        if ctype.endswith("*") or ctype.endswith("function*"):
            continue
        out.append((name, int(value, 0), ctype))
    return out


SPECIAL_VARS = [  # Fortran name, declaration suffix, Fortran type, common block, C symbol
    ("MPI_BOTTOM", "", "INTEGER", "MPI_FORTRAN_BOTTOM"),
    ("MPI_IN_PLACE", "", "INTEGER", "MPI_FORTRAN_IN_PLACE"),
    ("MPI_BUFFER_AUTOMATIC", "", "INTEGER", "MPI_FORTRAN_BUFFER_AUTOMATIC"),
    ("MPI_STATUS_IGNORE", "(MPI_STATUS_SIZE)", "INTEGER", "MPI_F_STIG"),
    ("MPI_STATUSES_IGNORE", "(MPI_STATUS_SIZE,1)", "INTEGER", "MPI_F_STSIG"),
    ("MPI_ERRCODES_IGNORE", "(1)", "INTEGER", "MPI_FORTRAN_ERRCODES_IGNORE"),
    ("MPI_UNWEIGHTED", "(1)", "INTEGER", "MPI_FORTRAN_UNWEIGHTED"),
    ("MPI_WEIGHTS_EMPTY", "(1)", "INTEGER", "MPI_FORTRAN_WEIGHTS_EMPTY"),
    ("MPI_ARGV_NULL", "(1)", "CHARACTER*1", "MPI_FORTRAN_ARGV_NULL"),
    ("MPI_ARGVS_NULL", "(1,1)", "CHARACTER*1", "MPI_FORTRAN_ARGVS_NULL"),
]
# These two live in libmpi_abi (MPI_F_STATUS_IGNORE / MPI_F_STATUSES_IGNORE of
# mpi_fortran.h): the common blocks are bound to those objects.
BIND_NAMES = {"MPI_F_STIG": "MPIX_F_status_ignore", "MPI_F_STSIG": "MPIX_F_statuses_ignore"}
PREDEF_CALLBACKS = ["MPI_COMM_NULL_COPY_FN", "MPI_COMM_DUP_FN", "MPI_COMM_NULL_DELETE_FN",
                    "MPI_TYPE_NULL_COPY_FN", "MPI_TYPE_DUP_FN", "MPI_TYPE_NULL_DELETE_FN",
                    "MPI_WIN_NULL_COPY_FN", "MPI_WIN_DUP_FN", "MPI_WIN_NULL_DELETE_FN",
                    "MPI_CONVERSION_FN_NULL"]
# The callbacks of the deprecated MPI_KEYVAL_CREATE (INTEGER attribute values):
# mpif.h and `use mpi` only (mpi_f08 has no MPI_KEYVAL_CREATE).
MPI1_CALLBACKS = ["MPI_NULL_COPY_FN", "MPI_NULL_DELETE_FN", "MPI_DUP_FN"]


def constant_decls(constants):
    """(type, name, value) for every constant of mpif.h and the module."""
    decls = [("INTEGER", "MPI_STATUS_SIZE", 8), ("INTEGER", "MPI_SOURCE", 1),
             ("INTEGER", "MPI_TAG", 2), ("INTEGER", "MPI_ERROR", 3),
             ("INTEGER", "MPI_INTEGER_KIND", 4), ("INTEGER", "MPI_ADDRESS_KIND", 8),
             ("INTEGER", "MPI_OFFSET_KIND", 8), ("INTEGER", "MPI_COUNT_KIND", 8)]
    for name, value, ctype in constants:
        if ctype == "MPI_Offset":
            decls.append(("INTEGER(KIND=MPI_OFFSET_KIND)", name, value))
        else:
            decls.append(("INTEGER", name, value))
    return decls


def write_mpif(path, constants, funcs):
    L = ["! mpif.h -- Axon MPI for Fortran (MPI 5.0 standard ABI values).",
         "! Generated by src/binding/gen_fortran.py: do not edit.",
         "! Valid as fixed-form and free-form source. INTEGER is the",
         "! default INTEGER*4 (MPI_INTEGER_KIND); handles are INTEGERs."]
    for t, name, value in constant_decls(constants):
        L.append(f"      {t} {name}")
        L.append(f"      PARAMETER ({name}={value})")
    L.append("      LOGICAL MPI_SUBARRAYS_SUPPORTED")
    L.append("      PARAMETER (MPI_SUBARRAYS_SUPPORTED=.FALSE.)")
    L.append("      LOGICAL MPI_ASYNC_PROTECTS_NONBLOCKING")
    L.append("      PARAMETER (MPI_ASYNC_PROTECTS_NONBLOCKING=.FALSE.)")
    L.append("! Special addresses: the C wrappers recognise these variables.")
    for name, dims, ftype, common in SPECIAL_VARS:
        L.append(f"      {ftype} {name}{dims}")
        L.append(f"      COMMON /{common}/ {name}")
        if common in BIND_NAMES:
            L.append(f"      BIND(C, NAME='{BIND_NAMES[common]}') :: /{common}/")
    L.append("! Functions (no IERROR argument), and their profiling names")
    for prefix in ("", "P"):
        for f in funcs:
            if f.ret != "int":
                t = "DOUBLE PRECISION" if f.ret == "double" else "INTEGER(KIND=MPI_ADDRESS_KIND)"
                L.append(f"      {t} {prefix}{f.name.upper()}")
                L.append(f"      EXTERNAL {prefix}{f.name.upper()}")
    L.append("! Predefined attribute callbacks")
    for cb in PREDEF_CALLBACKS + MPI1_CALLBACKS:
        L.append(f"      EXTERNAL {cb}")
    for line in L:
        assert len(line) <= 72, line
    with open(path, "w") as fh:
        fh.write("\n".join(L) + "\n")


# ---------------------------------------------------------------- per function
def fortran_params(f):
    return [p for p in f.params if p.kind not in DROPPED]


def per_rank_array(p, f):
    """Whether P is a per-process array (counts, displacements, datatypes) of a
    collective with buffers. Programs written for MPICH, whose `use mpi` has
    no interfaces for routines with buffers, pass a scalar where the array is
    not significant (MPI_IN_PLACE, a non-root process); the interface accepts
    that, as it accepts any buffer."""
    if not any(q.kind == "choice" for q in f.params) or not p.elem():
        return False
    return re.match(r"^(comm_size|indegree|outdegree)\(", p.attrs.get("len", "")) is not None


def f_dummy_decl(p, f):
    """Fortran declaration lines of one dummy argument in an interface."""
    k, n = p.kind, p.name
    el = p.elem()
    if k == "choice" or (el == "choice") or per_rank_array(p, f):
        return [f"!GCC$ ATTRIBUTES NO_ARG_CHECK :: {n}", f"type(*), dimension(*) :: {n}"]
    if k == "address":
        return [f"!GCC$ ATTRIBUTES NO_ARG_CHECK :: {n}", f"type(*) :: {n}"]
    if k.startswith("handle:"):
        return [f"integer :: {n}"]
    if k in SCALAR_F:
        return [f"{SCALAR_F[k]} :: {n}"]
    if k == "status":
        return [f"integer :: {n}(MPI_STATUS_SIZE)"]
    if k == "string":
        return [f"character(len=*) :: {n}"]
    if k.startswith("callback:"):
        return [f"external :: {n}"]
    if k in ("argv", "array:string"):
        return [f"character(len=*) :: {n}(*)"]
    if k == "array:argv":
        return [f"character(len=*) :: {n}(count, *)"]
    if el == "status":
        return [f"integer :: {n}(MPI_STATUS_SIZE, *)"]
    if el and el.startswith("handle:"):
        return [f"integer :: {n}(*)"]
    if el in SCALAR_F:
        dims = "(3, *)" if p.attrs.get("len") == "n*3" else "(*)"
        return [f"{SCALAR_F[el]} :: {n}{dims}"]
    raise Unsupported(f"{f.name}.{n}: kind {k}")


# Routines of `use mpi` (and `use mpi_f08`) that are not C functions:
# MPI_SIZEOF takes a variable of any type and rank (the C side reads the
# element size from the descriptor), MPI_F_SYNC_REG only has to be a call
# the compiler cannot see into.
MODULE_EXTRAS = [
    "    subroutine MPI_Sizeof(x, size, ierror) bind(C, name='axon_f_sizeof')",
    "      type(*), dimension(..) :: x",
    "      integer :: size, ierror",
    "    end subroutine MPI_Sizeof",
    "    subroutine MPI_F_sync_reg(buf)",
    "!GCC$ ATTRIBUTES NO_ARG_CHECK :: buf",
    "      type(*), dimension(*) :: buf",
    "    end subroutine MPI_F_sync_reg",
]


def write_module(path, constants, funcs):
    L = ["! mpi.f90 -- the `mpi` module of Axon MPI (use mpi).",
         "! Generated by src/binding/gen_fortran.py: do not edit.",
         "module mpi",
         "  implicit none"]
    for t, name, value in constant_decls(constants):
        L.append(f"  {t}, parameter :: {name} = {value}")
    L.append("  logical, parameter :: MPI_SUBARRAYS_SUPPORTED = .false.")
    L.append("  logical, parameter :: MPI_ASYNC_PROTECTS_NONBLOCKING = .false.")
    for name, dims, ftype, common in SPECIAL_VARS:
        L.append(f"  {ftype} :: {name}{dims}")
        L.append(f"  common /{common}/ {name}")
        if common in BIND_NAMES:
            L.append(f"  bind(C, name='{BIND_NAMES[common]}') :: /{common}/")
    L.append("  external :: " + ", ".join(PREDEF_CALLBACKS + MPI1_CALLBACKS))
    for f in funcs:
        if f.ret != "int":
            t = "double precision" if f.ret == "double" else "integer(kind=MPI_ADDRESS_KIND)"
            L.append(f"  {t}, external :: P{f.name}")
    L.append("  interface")
    L += MODULE_EXTRAS
    for f in funcs:
        params = fortran_params(f)
        names = [p.name for p in params]
        ierr = f.ret == "int" and f.flags.get("fortran_ierror") != "no"
        if ierr:
            names.append("ierror")
            head = f"subroutine {f.name}({', '.join(names)})"
            tail = f"end subroutine {f.name}"
        else:
            t = "double precision" if f.ret == "double" else "integer(kind=MPI_ADDRESS_KIND)"
            head = f"{t} function {f.name}({', '.join(names)})"
            tail = f"end function {f.name}"
        L.append("    " + head)
        L.append("      import :: MPI_ADDRESS_KIND, MPI_OFFSET_KIND, MPI_COUNT_KIND, MPI_STATUS_SIZE")
        L.append("      implicit none")
        for p in params:
            for d in f_dummy_decl(p, f):
                L.append(("" if d.startswith("!GCC$") else "      ") + d)
        if ierr:
            L.append("      integer :: ierror")
        L.append("    " + tail)
    L.append("  end interface")
    L.append("end module mpi")
    with open(path, "w") as fh:
        fh.write("\n".join(x for line in L for x in wrap_free(line)) + "\n")


def wrap_free(line, width=100):
    """Free-form continuation lines at commas, none longer than WIDTH."""
    if len(line) <= width or line.lstrip().startswith("!"):
        return [line]
    indent = " " * (len(line) - len(line.lstrip()) + 4)
    out, cur = [], ""
    for piece in re.split(r"(?<=, )", line):
        if cur and len(cur) + len(piece) + 2 > width:
            out.append(cur.rstrip() + " &")
            cur = indent
        cur += piece
    out.append(cur)
    return out


# ---------------------------------------------------------------- C wrappers
def c_len(expr, f):
    """C expression for a length expression of the description."""
    m = re.match(r"^(comm_size|indegree|outdegree)\((\w+)\)$", expr)
    if m:
        return f"axon_f_{m.group(1)}(c_{m.group(2)})"
    m = re.match(r"^\*?(\w+)$", expr)
    if m and f.param(m.group(1)) is not None:
        p = f.param(m.group(1))
        if p.kind in ("count", "int", "mpi_count"):
            return f"(int)*{p.name}"
    raise Unsupported(f"{f.name}: length {expr}")


def c_wrapper(f):
    sig, hidden, pre, pre2, args, post, free = [], [], [], [], [], [], []
    for p in f.params:
        k, n, el = p.kind, p.name, p.elem()
        if k in ("argc", "argv_ptr"):
            args.append("0" if p.ctype == "int" else "NULL")
        elif k == "varargs":
            continue
        elif k == "choice":
            sig.append(f"void *{n}")
            args.append(f"axon_f_buf({n})")
        elif k.startswith("handle:"):
            h = p.handle()
            conv, ct = HANDLE_CONV[h], C_HANDLE[h]
            sig.append(f"MPI_Fint *{n}")
            pre.append(f"{ct} c_{n} = MPI_{conv}_fromint(*{n});")
            if p.dir == "in":
                args.append(f"c_{n}")
            else:
                args.append(f"&c_{n}")
                post.append(f"*{n} = MPI_{conv}_toint(c_{n});")
        elif k == "logical":
            sig.append(f"MPI_Fint *{n}")
            if p.dir == "in":
                args.append(f"*{n} != 0")
            else:
                pre.append(f"int c_{n} = 0;")
                args.append(f"&c_{n}")
                post.append(f"*{n} = c_{n} ? AXON_F_TRUE : AXON_F_FALSE;")
        elif k in ("count", "int"):
            sig.append(f"MPI_Fint *{n}")
            if p.dir == "in":
                args.append(f"*{n}")
            else:
                args.append(n)
                if p.attrs.get("base") == "1":
                    post.append(f"if (*ierror == MPI_SUCCESS && *{n} >= 0) *{n} += 1;")
        elif k in ("aint", "offset", "mpi_count", "double"):
            sig.append(f"{SCALAR_C[k]} *{n}")
            args.append(f"*{n}" if p.dir == "in" else n)
        elif k == "address":
            sig.append(f"MPI_Aint *{n}")
            args.append(n)
        elif k == "status":
            sig.append(f"MPI_Fint *{n}")
            args.append(f"axon_f_status({n})")
        elif el == "status":
            sig.append(f"MPI_Fint *{n}")
            args.append(f"axon_f_statuses({n})")
        elif el in ("int", "logical"):
            sig.append(f"MPI_Fint *{n}")
            special = p.attrs.get("special", "")
            if p.attrs.get("len") == "n*3":
                args.append(f"(int (*)[3]){n}")
            else:
                args.append(f"axon_f_ints({n})" if special else n)
            if p.dir == "out" and (el == "logical" or p.attrs.get("base") == "1"):
                ln = c_len(p.attrs["len"], f)
                fix = f"{n}[i] = {n}[i] ? AXON_F_TRUE : AXON_F_FALSE;" if el == "logical" else f"{n}[i] += 1;"
                post.append(f"if (*ierror == MPI_SUCCESS && {ln} != MPI_UNDEFINED)"
                            f" for (int i = 0; i < {ln}; ++i) {fix}")
        elif el in ("aint", "offset", "mpi_count"):
            sig.append(f"{SCALAR_C[el]} *{n}")
            args.append(n)
        elif el and el.startswith("handle:"):
            h = el[7:]
            conv, ct = HANDLE_CONV[h], C_HANDLE[h]
            sig.append(f"MPI_Fint *{n}")
            ln = c_len(p.attrs.get("len", "?"), f)
            cond = ""
            if n == "sendtypes" and f.param("sendbuf") is not None:
                cond = "axon_f_buf(sendbuf) == MPI_IN_PLACE ? 0 : "
            pre2.append(f"int n_{n} = {cond}{ln};")
            pre2.append(f"{ct} *c_{n} = ({ct} *)axon_f_alloc(n_{n}, sizeof({ct}));")
            pre2.append(f"for (int i = 0; i < n_{n}; ++i) c_{n}[i] = MPI_{conv}_fromint({n}[i]);")
            args.append(f"c_{n}")
            if p.dir != "in":
                post.append(f"for (int i = 0; i < n_{n}; ++i) {n}[i] = MPI_{conv}_toint(c_{n}[i]);")
            free.append(f"free(c_{n});")
        elif k == "string":
            sig.append(f"char *{n}")
            hidden.append(f"size_t {n}_len")
            if p.dir == "in":
                pre.append(f"char *c_{n} = axon_f_str_in({n}, {n}_len);")
                args.append(f"c_{n}")
                free.append(f"free(c_{n});")
            else:
                mx = p.attrs.get("max", "?")
                if mx.startswith("MPI_MAX_"):
                    size = f"{mx} + 1"
                elif f.param(mx) is not None and f.param(mx).dir == "in":
                    size = f"(size_t)(*{mx} > 0 ? *{mx} : 0) + 1"
                else:
                    raise Unsupported(f"{f.name}.{n}: string out of size {mx}")
                pre.append(f"char *c_{n} = (char *)axon_f_alloc(1, {size});")
                args.append(f"c_{n}")
                # A routine with an output FLAG leaves the string as it was
                # when FLAG is false (MPI_INFO_GET of a missing key).
                fl = f.param("flag")
                cond = "*ierror == MPI_SUCCESS && c_flag" if fl is not None and fl.kind == "logical" else None
                post.append(f"if ({cond}) axon_f_str_out(c_{n}, {n}, {n}_len);" if cond
                            else f"axon_f_str_out(c_{n}, {n}, {n}_len);")
                free.append(f"free(c_{n});")
        else:
            raise Unsupported(f"{f.name}.{n}: kind {k}")
    fname = f.name.lower() + "_"
    if f.ret == "int":
        sig.append("MPI_Fint *ierror")
        rtype = "void"
    else:
        rtype = {"double": "double", "MPI_Aint": "MPI_Aint"}.get(f.ret)
        if rtype is None:
            raise Unsupported(f"{f.name}: returns {f.ret}")
    allsig = ", ".join(sig + hidden) or "void"
    if rtype == "void":
        body = [f"AXON_F_ENTRY({fname}, ({allsig}))", "{"]
    else:
        # Functions (MPI_WTIME, MPI_WTICK, MPI_AINT_ADD, ...): pmpi_ and mpi_ as
        # AXON_F_ENTRY makes them, with their return type.
        body = [f"AXON_F_API {rtype} {fname}({allsig}) __attribute__((weak, alias(\"p{fname}\")));",
                f"AXON_F_API {rtype} p{fname}({allsig});", f"{rtype} p{fname}({allsig})", "{"]
    body += ["    " + x for x in pre + pre2]
    call = f"{f.name}({', '.join(args)})"
    if f.ret == "int":
        body.append(f"    *ierror = {call};")
        body += ["    " + x for x in post + free]
    else:
        body.append(f"    return {call};")
    body.append("}")
    return "\n".join(body) + "\n"


def tkr(p):
    """Type, kind and rank of the mpi_f08 dummy for P (None: any, a choice)."""
    k, el = p.kind, p.elem()
    if k in ("choice", "address") or k.startswith("callback:"):
        return None
    base = el or k
    t = SCALAR_F.get(base, base)
    t = {"integer(kind=MPI_ADDRESS_KIND)": "i8", "integer(kind=MPI_OFFSET_KIND)": "i8",
         "integer(kind=MPI_COUNT_KIND)": "i8", "integer": "i4"}.get(t, t)
    return (t, 1 if el else 0)


def large_variants(all_funcs):
    """The large-count variants that mpi_f08 offers as specific procedures
    of the generic MPI_<name> (MPI_<name>_c_f08), with the C wrappers they
    call (mpi_<name>_c_): those of bound functions whose arguments differ
    from the int form in type or kind somewhere. Where they do not (MPI_Count
    and MPI_Aint are both 8-byte INTEGERs: MPI_Type_get_extent_c), or where
    they differ only in a callback's interface (MPI_Op_create_c), Fortran
    cannot tell the two apart and only the int form exists."""
    by_name = {f.name: f for f in all_funcs}
    out = []
    for f in all_funcs:
        fc = by_name.get(f.flags.get("large", ""))
        if (fc is None or not f.exported or not fc.exported or f.flags.get("fortran") in ("no", "special")
                or f.flags.get("f08") == "no" or "large_of" in f.flags):
            continue
        a = [tkr(p) for p in fortran_params(f)]
        b = [tkr(p) for p in fortran_params(fc)]
        if len(a) == len(b) and all(x == y or x is None or y is None for x, y in zip(a, b)):
            continue
        out.append(fc)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--api", required=True)
    ap.add_argument("--constants", required=True)
    ap.add_argument("--outdir", required=True)
    a = ap.parse_args()
    all_funcs = mpi_api.load(a.api)
    funcs = [f for f in all_funcs if f.exported and "large_of" not in f.flags
             and f.flags.get("fortran") != "no"]
    constants = read_constants(a.constants)
    wrappers, symbols, errors = [], [], []
    # The large-count wrappers serve mpi_f08 only (mpif.h and `use mpi` have
    # no large-count routines).
    for f in funcs + large_variants(all_funcs):
        try:
            for p in fortran_params(f):
                f_dummy_decl(p, f)
            if f.flags.get("fortran") != "special":
                wrappers.append(c_wrapper(f))
        except Unsupported as e:
            errors.append(str(e))
            continue
        symbols += [f.name.lower() + "_", "p" + f.name.lower() + "_"]
    if errors:
        sys.exit("gen_fortran.py: functions the generator cannot convert; flag them "
                 "fortran=special (and write them) or fortran=no in %overrides:\n  " + "\n  ".join(errors))
    os.makedirs(a.outdir, exist_ok=True)
    write_mpif(os.path.join(a.outdir, "mpif.h"), constants, funcs)
    write_module(os.path.join(a.outdir, "mpi.f90"), constants, funcs)
    with open(os.path.join(a.outdir, "mpi_fortran_gen.c"), "w") as fh:
        fh.write("/* Fortran entry points of Axon MPI: generated by src/binding/gen_fortran.py\n"
                 " * from src/binding/mpi_api.txt. Do not edit. */\n"
                 "#include \"fortran/fortran_util.h\"\n\n")
        fh.write("\n".join(wrappers))
    with open(os.path.join(a.outdir, "fortran_symbols.txt"), "w") as fh:
        fh.write("\n".join(symbols) + "\n")


if __name__ == "__main__":
    main()
