# The KCL runtime's side of engine/kcl: one process compiles every program
# of a run, so Python and kcl-lib start once. It reads one JSON request a
# line on stdin and writes one JSON response a line; engine/kcl sends the
# next request only after the response to the last.
#
# Request:  {"work_dir": ..., "files": [...], "packages": [{"name", "path"}],
#            "args": [{"name", "value"}], "max_output": bytes}
# Response: {"yaml": ...}                 the program's YAML
#           {"error": ...}                KCL refused the program: its
#                                         diagnostics (SARIF) or message
#           {"too_large": bytes}          the YAML is over max_output
#           {"fault": ...}                the request could not be served
# The first line written, before any request, is {"ready": ...}.
import json
import os
import sys


def main():
    # The protocol owns the stdout the process was given. kcl-lib's native
    # code writes diagnostics to file descriptor 1 on its own (and late, from
    # a buffer), so descriptor 1 becomes stderr and the protocol writes to a
    # copy of the original.
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    import kcl_lib.api as api

    kcl = api.API()
    send(out, {"ready": {"python": sys.version.split()[0], "pid": os.getpid(), "base_prefix": sys.base_prefix}})
    for line in sys.stdin.buffer:
        try:
            req = json.loads(line)
            resp = run(api, kcl, req)
        except Exception as e:  # a request this program does not understand
            resp = {"fault": "%s: %s" % (type(e).__name__, e)}
        send(out, resp)


def run(api, kcl, req):
    # The options Kusion compiles a stack with (its
    # pkg/engine/api/generate/run/run.go): disable_none and the schema's
    # full type path in _type; its sort_keys stays unset.
    args = api.ExecProgramArgs(
        work_dir=req["work_dir"],
        k_filename_list=req["files"],
        external_pkgs=[api.ExternalPkg(pkg_name=p["name"], pkg_path=p["path"]) for p in req.get("packages") or []],
        args=[api.Argument(name=a["name"], value=a["value"]) for a in req.get("args") or []],
        disable_none=True,
        include_schema_type_path=True,
        sort_keys=False,
        # Structured diagnostics for what the parser and the type checker
        # refuse; a failure while evaluating comes back in err_message as
        # text whatever this says.
        error_format="sarif",
    )
    try:
        result = kcl.exec_program(args)
    except Exception as e:
        return {"error": str(e)}
    if result.err_message:
        return {"error": result.err_message}
    yaml = result.yaml_result
    size = len(yaml.encode("utf-8"))
    if size > req.get("max_output", size):
        return {"too_large": size}
    return {"yaml": yaml}


def send(out, obj):
    out.write(json.dumps(obj) + "\n")
    out.flush()


main()
