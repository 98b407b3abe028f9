#!/usr/bin/env python3
"""Derive src/binding/mpi_api.txt from the prototypes of include/mpi.h.

    python3 src/binding/derive_api.py [--exported LIST] [--check]

Reads every `MPI_*` prototype of include/mpi.h, classifies each parameter by
its C type and name (the rules below), marks the functions libmpi_abi exports
(LIST: one name a line, e.g. from
`nm -D --defined-only .libs/libmpi_abi.so | awk '$3 ~ /^MPI_/ {print $3}'`;
without it the `exported` flags of the current mpi_api.txt are kept), applies
the hand-kept `%overrides` section at the end of mpi_api.txt, and rewrites
the file above that section. The overrides section itself is kept verbatim.
--check exits 1 (writing nothing) when the file would change.

The format is documented at the top of mpi_api.txt and in docs/fortran.md.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
API = os.path.join(HERE, "mpi_api.txt")
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import mpi_api  # noqa: E402

HANDLES = {"MPI_Comm": "Comm", "MPI_Datatype": "Datatype", "MPI_Group": "Group",
           "MPI_Request": "Request", "MPI_File": "File", "MPI_Win": "Win", "MPI_Op": "Op",
           "MPI_Info": "Info", "MPI_Errhandler": "Errhandler", "MPI_Message": "Message",
           "MPI_Session": "Session"}
COUNT_NAMES = {"count", "sendcount", "recvcount", "incount", "outcount", "origin_count",
               "target_count", "result_count", "blocklength", "maxprocs", "insize", "outsize"}
LOGICAL_NAMES = {"flag", "reorder", "commute", "is_set", "weighted", "periods", "remain_dims",
                 "logical_true", "logical_false"}
CHOICE_NAMES = {"buf", "sendbuf", "recvbuf", "inbuf", "outbuf", "inoutbuf", "origin_addr",
                "result_addr", "compare_addr", "location", "buffer", "base", "userbuf"}
PTR_OUT_NAMES = {"baseptr", "buffer_addr"}
# int * parameters that are arrays, not scalars
INT_PTR_ARRAYS = {"array_of_blocklengths", "destweights", "sourceweights"}
WEIGHTS = {"weights", "sourceweights", "destweights"}
# output handles that the call also reads (the rest of `MPI_X *` are plain out)
INOUT_FUNCS = re.compile(r"_free$|_commit$|^MPI_(Wait|Test|Start|Cancel|Request_free|Grequest_complete"
                         r"|File_close|Comm_disconnect|Win_free|Session_finalize)")


def strip_comments(src):
    src = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
    return re.sub(r"//[^\n]*", "", src)


def prototypes(header):
    src = strip_comments(open(header).read())
    out = {}
    for m in re.finditer(r"^\s*((?:const\s+)?[A-Za-z_][A-Za-z_0-9]*\s*\**)\s*(MPI_\w+)\s*\(([^;{)]*(?:\)[^;{)]*)*)\)\s*;",
                         src, re.M):
        ret, name, args = " ".join(m.group(1).split()), m.group(2), m.group(3)
        if name not in out:
            out[name] = (ret, " ".join(args.split()))
    return out


def split_param(text):
    """'const int ranges[][3]' -> (ctype 'const int [][3]', name 'ranges')."""
    text = text.strip()
    if text == "...":
        return "...", "varargs"
    m = re.match(r"^(.*?)([A-Za-z_][A-Za-z_0-9]*)\s*((?:\[[^\]]*\])*)$", text)
    base, name, dims = m.group(1).strip(), m.group(2), m.group(3)
    base = re.sub(r"\s*\*", " *", base).replace("* *", "**").replace("* *", "**")
    ctype = (base + (" " + dims if dims else "")).strip()
    return ctype, name


STRING_MAX = {"MPI_Comm_get_name": "MPI_MAX_OBJECT_NAME", "MPI_Type_get_name": "MPI_MAX_OBJECT_NAME",
              "MPI_Win_get_name": "MPI_MAX_OBJECT_NAME", "MPI_Error_string": "MPI_MAX_ERROR_STRING",
              "MPI_Get_processor_name": "MPI_MAX_PROCESSOR_NAME",
              "MPI_Get_library_version": "MPI_MAX_LIBRARY_VERSION_STRING",
              "MPI_Open_port": "MPI_MAX_PORT_NAME", "MPI_Lookup_name": "MPI_MAX_PORT_NAME",
              "MPI_Info_get_nthkey": "MPI_MAX_INFO_KEY", "MPI_File_get_view": "MPI_MAX_DATAREP_STRING",
              "MPI_Info_get": "valuelen", "MPI_Info_get_string": "*buflen",
              "MPI_Session_get_nth_pset": "*pset_len"}


def guess_len(func, name, names):
    """The length expression of array parameter NAME of FUNC."""
    neighbor = "neighbor" in func.lower()
    if name in ("sendcounts", "recvcounts", "displs", "sdispls", "rdispls", "sendtypes", "recvtypes"):
        if neighbor:
            return ("outdegree(comm)" if name.startswith("s") else "indegree(comm)")
        return "comm_size(comm)"
    for arr, n in (("array_of_integers", "max_integers"), ("array_of_addresses", "max_addresses"),
                   ("array_of_datatypes", "max_datatypes"), ("array_of_large_counts", "max_large_counts")):
        if name == arr and n in names:
            return n
    if name in ("array_of_sizes", "array_of_subsizes", "array_of_starts", "array_of_gsizes",
                "array_of_distribs", "array_of_dargs", "array_of_psizes", "dims", "periods",
                "coords", "remain_dims"):
        for c in ("ndims", "maxdims"):
            if c in names:
                return c
        return "cartdim(comm)"
    if name == "array_of_partitions":
        return "length"
    if name in ("ranks", "ranks1", "ranks2"):
        return "n"
    if name == "indx":
        return "nnodes" if "nnodes" in names else "maxindex"
    if name == "edges":
        return "indx[nnodes-1]" if "nnodes" in names else "maxedges"
    if name in ("neighbors",):
        return "maxneighbors"
    if name in ("sources", "sourceweights"):
        return "indegree" if "indegree" in names else ("maxindegree" if "maxindegree" in names else "n")
    if name in ("destinations", "destweights"):
        return "outdegree" if "outdegree" in names else ("maxoutdegree" if "maxoutdegree" in names else "sum(degrees)")
    if name == "degrees":
        return "n"
    if name == "weights":
        return "indx[nnodes-1]" if "nnodes" in names else "?"
    if name == "array_of_errcodes":
        return "maxprocs" if "maxprocs" in names else "sum(array_of_maxprocs)"
    for c in ("count", "incount", "n"):
        if c in names and c != name:
            return c
    return "?"


def classify(func, ctype, name, params):
    """Returns (kind, dir, attrs) for one parameter."""
    const = ctype.startswith("const ")
    t = ctype[6:] if const else ctype
    arr = "[]" in t
    base = t.split("[")[0].strip()
    ptr = base.endswith("*")
    core = base.rstrip("* ").strip()
    attrs = {}
    names = [p[1] for p in params]

    def count_len():
        return guess_len(func, name, names)

    if ctype == "...":
        return "varargs", "in", attrs
    if core in HANDLES:
        h = "handle:" + HANDLES[core]
        if arr or name.startswith("array_of_") and ptr:
            attrs["len"] = count_len()
            d = "in" if const else ("inout" if core == "MPI_Request" else "out")
            return "array:" + h, d, attrs
        if ptr:
            return h, "inout" if INOUT_FUNCS.search(func) else "out", attrs
        return h, "in", attrs
    if core == "MPI_Status":
        if name == "array_of_statuses":
            attrs["len"] = count_len()
            attrs["special"] = "MPI_STATUSES_IGNORE"
            return "array:status", "out", attrs
        attrs["special"] = "MPI_STATUS_IGNORE"
        return "status", "in" if const else ("inout" if func.startswith("MPI_Status_set") else "out"), attrs
    if core in ("MPI_Aint", "MPI_Count", "MPI_Offset"):
        k = {"MPI_Aint": "aint", "MPI_Count": "mpi_count", "MPI_Offset": "offset"}[core]
        if arr or (ptr and name.startswith("array_of_")):
            attrs["len"] = count_len()
            return "array:" + k, "in" if const else "out", attrs
        return k, "out" if ptr else "in", attrs
    if core == "int":
        if "[3]" in t:
            attrs["len"] = "n*3"
            return "array:int", "in", attrs
        if arr or (ptr and (name in INT_PTR_ARRAYS or name in WEIGHTS)):
            elem = "logical" if name in LOGICAL_NAMES else "int"
            attrs["len"] = count_len()
            if name in WEIGHTS:
                attrs["special"] = "MPI_UNWEIGHTED,MPI_WEIGHTS_EMPTY"
            if name == "array_of_errcodes":
                attrs["special"] = "MPI_ERRCODES_IGNORE"
            if name in ("array_of_indices",):
                attrs["len"] = "*outcount"
                attrs["base"] = "1"
            return "array:" + elem, "in" if const else "out", attrs
        if ptr:
            if name == "argc":
                return "argc", "inout", attrs
            if name == "indx":
                attrs["base"] = "1"
            return ("logical" if name in LOGICAL_NAMES else "int"), "out", attrs
        if name in COUNT_NAMES:
            return "count", "in", attrs
        return ("logical" if name in LOGICAL_NAMES else "int"), "in", attrs
    if core == "char":
        stars = base.count("*") + (1 if arr else 0)
        if name == "argv" and stars == 3:
            return "argv_ptr", "inout", attrs
        if name == "argv":
            attrs["special"] = "MPI_ARGV_NULL"
            return "argv", "in", attrs
        if name == "array_of_argv":
            attrs["len"] = "count"
            attrs["special"] = "MPI_ARGVS_NULL"
            return "array:argv", "in", attrs
        if name == "array_of_commands":
            attrs["len"] = "count"
            return "array:string", "in", attrs
        if const:
            return "string", "in", attrs
        attrs["max"] = STRING_MAX.get(func.removesuffix("_c"), "?")
        return "string", "out", attrs
    if core.endswith("_function") or core.endswith("_function_c"):
        return "callback:" + core, "in", attrs
    if core == "void" and ptr:
        if name in CHOICE_NAMES:
            if name in ("sendbuf", "inbuf") or (name == "recvbuf" and "catter" in func
                                                and "Reduce" not in func):
                attrs["special"] = "MPI_BOTTOM,MPI_IN_PLACE"
            elif name == "buffer" and "attach" in func:
                attrs["special"] = "MPI_BUFFER_AUTOMATIC"
            else:
                attrs["special"] = "MPI_BOTTOM"
            return "choice", "in" if const else ("inout" if name in ("inoutbuf",) else "out" if name in ("recvbuf", "result_addr", "outbuf") else "inout"), attrs
        if name in PTR_OUT_NAMES:
            return "address", "out", attrs
        if name == "attribute_val":
            return "attr_val", "in" if "set" in func or "put" in func else "out", attrs
        if name == "extra_state":
            return "extra_state", "in", attrs
        return "unknown", "in", attrs
    if core == "double":
        return "double", "in", attrs
    return "unknown", "in", attrs


def derive(header, exported, old_funcs):
    protos = prototypes(header)
    funcs = []
    for name in sorted(protos):
        if name.startswith("MPI_T_") or name.endswith("_toint") or name.endswith("_fromint"):
            continue
        ret, args = protos[name]
        if exported is not None:
            exp = name in exported
        elif name in old_funcs:
            exp = old_funcs[name].exported
        else:
            exp = True
        raw = [] if args in ("", "void") else [split_param(a) for a in args.split(",")]
        f = mpi_api.Function(name, ret)
        f.exported = exp
        if name.endswith("_c") and name[:-2] in protos:
            f.flags["large_of"] = name[:-2]
        elif name + "_c" in protos:
            f.flags["large"] = name + "_c"
        for ctype, pname in raw:
            kind, d, attrs = classify(name, ctype, pname, raw)
            f.params.append(mpi_api.Param(pname, ctype, kind, d, attrs))
        funcs.append(f)
    return funcs


def main():
    exported = None
    check = "--check" in sys.argv
    if "--exported" in sys.argv:
        exported = set(open(sys.argv[sys.argv.index("--exported") + 1]).read().split())
    old_funcs, overrides = {}, ""
    if os.path.exists(API):
        text = open(API).read()
        if "\n%overrides" in text:
            overrides = text[text.index("\n%overrides") + 1:]
        old_funcs = {f.name: f for f in mpi_api.parse(text)}
    funcs = derive(os.path.join(TOP, "include", "mpi.h"), exported, old_funcs)
    mpi_api.apply_overrides(funcs, overrides)
    out = mpi_api.HEADER + "".join(mpi_api.format_function(f) for f in funcs) + "\n" + overrides
    if check:
        sys.exit(0 if os.path.exists(API) and open(API).read() == out else 1)
    with open(API, "w") as fh:
        fh.write(out)
    todo = [f"{f.name}.{p.name}" for f in funcs if f.exported for p in f.params
            if p.kind == "unknown" or "?" in p.attrs.values()]
    print(f"{len(funcs)} functions, {sum(f.exported for f in funcs)} exported; "
          f"{len(todo)} parameters still to describe in %overrides", file=sys.stderr)
    for t in todo:
        print("  " + t, file=sys.stderr)


if __name__ == "__main__":
    main()
