"""Reader and writer of src/binding/mpi_api.txt, the description of the MPI C
API that the binding generators use (format: the HEADER below)."""
import re

HEADER = """\
# mpi_api.txt -- the MPI C API of Axon, one entry per function of mpi.h
# (MPI_T_* and the handle _toint/_fromint conversions left out). This file is
# the source of truth for the generated language bindings (src/binding/
# gen_fortran.py; later use mpi_f08 and the C large-count boilerplate).
#
# Everything above the line "%overrides" is written by derive_api.py from the
# prototypes of include/mpi.h; the %overrides section at the end is kept by
# hand and applied on every derivation. Edit the overrides, then run
#     python3 src/binding/derive_api.py [--exported LIST]
# (docs/fortran.md). A test checks that this file is up to date.
#
# An entry is a header line and one indented line per parameter:
#
#   NAME(RETURN-C-TYPE) exported|unexported [FLAG=VALUE ...]
#       PARAM | C-TYPE | KIND | DIR [| ATTR=VALUE ...]
#
# exported:  libmpi_abi defines the function (unexported: declared only).
# FLAGS:     large=NAME_c     the large-count variant exists (MPI_Count counts)
#            large_of=NAME    this is the large-count variant of NAME
#            fortran=special  the Fortran wrapper is hand-written (src/fortran/)
#            fortran=no       no Fortran binding (C only, or not done yet)
#            fortran_ierror=no  the Fortran routine has no IERROR argument
#            f08=no           mpif.h and `use mpi` only (no mpi_f08 form)
# DIR:       in | out | inout
# KIND:      choice           a buffer of any type (void *)
#            count            an int count;  mpi_count: an MPI_Count
#            int              an int scalar (rank, tag, keyval, enum, ...)
#            logical          an int used as a boolean (Fortran LOGICAL)
#            aint | offset    MPI_Aint (address/displacement) | MPI_Offset
#            handle:T         an MPI handle, T one of Comm Datatype Group
#                             Request File Win Op Info Errhandler Message Session
#            status           MPI_Status *
#            array:ELEM       an array of ELEM (any kind above, or string/argv)
#                             of length ATTR len=EXPR (EXPR: a parameter name,
#                             *NAME for an output parameter, n*3, comm_size(C)
#                             the remote size of an intercommunicator else the
#                             size, indegree(C) / outdegree(C) of a topology,
#                             sum(A) of an array, ? when still unknown)
#            string           char *: in: NUL-terminated; out: ATTR max=EXPR
#                             is the buffer size without the NUL (a constant
#                             MPI_MAX_* or a parameter)
#            argv | argv_ptr | argc   spawn argv (char *[]), MPI_Init's argc/argv
#            callback:TYPE    a function pointer of typedef TYPE
#            attr_val         attribute value (in: the value; out: void * that
#                             receives it);  extra_state: void * user state
#            address          out: a void * receiving a memory address
#            double | varargs | unknown
# ATTRS:     len=EXPR  max=EXPR  special=CONST[,CONST] (the MPI constants the
#            argument may be: MPI_BOTTOM MPI_IN_PLACE MPI_STATUS_IGNORE ...)
#            base=1    (Fortran) an index that is 1-based in Fortran
#
"""


class Param:
    def __init__(self, name, ctype, kind, dir, attrs=None):
        self.name, self.ctype, self.kind, self.dir = name, ctype, kind, dir
        self.attrs = dict(attrs or {})

    def elem(self):
        return self.kind[6:] if self.kind.startswith("array:") else None

    def handle(self):
        k = self.elem() or self.kind
        return k[7:] if k.startswith("handle:") else None


class Function:
    def __init__(self, name, ret):
        self.name, self.ret = name, ret
        self.exported = True
        self.flags = {}
        self.params = []

    def param(self, name):
        for p in self.params:
            if p.name == name:
                return p
        return None


def format_function(f):
    flags = " ".join(f"{k}={v}" for k, v in sorted(f.flags.items()))
    head = f"{f.name}({f.ret}) {'exported' if f.exported else 'unexported'}"
    lines = [head + (" " + flags if flags else "")]
    for p in f.params:
        fields = [p.name, p.ctype, p.kind, p.dir]
        if p.attrs:
            fields.append(" ".join(f"{k}={v}" for k, v in sorted(p.attrs.items())))
        lines.append("    " + " | ".join(fields))
    return "\n".join(lines) + "\n"


def parse(text):
    funcs = []
    for line in text.split("\n"):
        if line.startswith("%overrides"):
            break
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            m = re.match(r"^(\w+)\((.*)\)\s+(exported|unexported)\s*(.*)$", line)
            if not m:
                raise ValueError("bad entry line: " + line)
            f = Function(m.group(1), m.group(2))
            f.exported = m.group(3) == "exported"
            for kv in m.group(4).split():
                k, v = kv.split("=", 1)
                f.flags[k] = v
            funcs.append(f)
        else:
            fields = [x.strip() for x in line.split("|")]
            attrs = {}
            if len(fields) > 4:
                for kv in fields[4].split():
                    k, v = kv.split("=", 1)
                    attrs[k] = v
            funcs[-1].params.append(Param(fields[0], fields[1], fields[2], fields[3], attrs))
    return funcs


def apply_overrides(funcs, text):
    """Override lines: 'FUNC key=value ...' sets function flags (and
    exported=yes|no); 'FUNC.PARAM key=value ...' sets kind=, dir= or an
    attribute of one parameter (a value '-' removes the attribute)."""
    by_name = {f.name: f for f in funcs}
    for line in text.split("\n")[1:]:
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        target, *kvs = line.split()
        fname, _, pname = target.partition(".")
        f = by_name.get(fname)
        if f is None:
            raise ValueError("override for unknown function: " + line)
        if not pname:
            for kv in kvs:
                k, v = kv.split("=", 1)
                if k == "exported":
                    f.exported = v == "yes"
                elif v == "-":
                    f.flags.pop(k, None)
                else:
                    f.flags[k] = v
            continue
        p = f.param(pname)
        if p is None:
            raise ValueError("override for unknown parameter: " + line)
        for kv in kvs:
            k, v = kv.split("=", 1)
            if k in ("kind", "dir"):
                setattr(p, k, v)
            elif v == "-":
                p.attrs.pop(k, None)
            else:
                p.attrs[k] = v


def load(path):
    return parse(open(path).read())
