"""Builds one bench driver per allocator, always optimised, and the manifest
bench.py reads to find them.

`bazel run //bench` takes no flags, yet the measured code must be the
opt build (-O2, asserts off: the `opt` config of .bazelrc). A Starlark
transition applies that to each driver and everything it links (the stage,
common/), whatever the command line says.
"""

def _opt_transition_impl(settings, attr):
    return {
        "//command_line_option:compilation_mode": "opt",
        "//command_line_option:copt": settings["//command_line_option:copt"] + ["-DNDEBUG"],
    }

_opt_transition = transition(
    implementation = _opt_transition_impl,
    inputs = ["//command_line_option:copt"],
    outputs = ["//command_line_option:compilation_mode", "//command_line_option:copt"],
)

# Bazel lets only allowlisted rules use a Starlark transition on an attribute.
_TRANSITION_ALLOWLIST = {
    "_allowlist_function_transition": attr.label(
        default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
    ),
}

def _opt_binary_impl(ctx):
    binary = ctx.attr.binary[0]
    exe = binary[DefaultInfo].files_to_run.executable
    out = ctx.actions.declare_file(ctx.label.name)
    ctx.actions.symlink(output = out, target_file = exe, is_executable = True)
    runfiles = ctx.runfiles(files = [out, exe]).merge(binary[DefaultInfo].default_runfiles)
    return [DefaultInfo(executable = out, files = depset([out]), runfiles = runfiles)]

opt_binary = rule(
    implementation = _opt_binary_impl,
    executable = True,
    attrs = dict(
        binary = attr.label(cfg = _opt_transition, executable = True, mandatory = True),
        **_TRANSITION_ALLOWLIST
    ),
    doc = "`binary` built with --compilation_mode=opt and -DNDEBUG.",
)

def _opt_file_impl(ctx):
    src = ctx.attr.src[0][DefaultInfo].files.to_list()
    if len(src) != 1:
        fail("%s must be exactly one file" % ctx.attr.src.label)
    out = ctx.actions.declare_file(ctx.label.name)
    ctx.actions.symlink(output = out, target_file = src[0])
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out, src[0]]))]

opt_file = rule(
    implementation = _opt_file_impl,
    attrs = dict(
        src = attr.label(cfg = _opt_transition, mandatory = True, allow_files = True),
        **_TRANSITION_ALLOWLIST
    ),
    doc = "One file (a shared library) built with --compilation_mode=opt and -DNDEBUG.",
)

# The driver's files, every build the same; each build adds one allocator
# shim (bench/alloc_shim.h): shim_malloc.c or shim_hcmalloc.c.
DRIVER_SRCS = [
    "bench_driver.c",
    "alloc_shim.h",
    "callgrind_loop.c",
    "callgrind_loop.h",
    "harness.c",
    "harness.h",
    "heapmap.c",
    "heapmap.h",
    "probes.c",
    "probes.h",
    "thread_workloads.c",
    "workloads.c",
    "workloads.h",
]

# -flto on the driver's own files (not the allocator's: it is measured as
# built): the shim's one-line wrappers are inlined into the workloads at
# link time, so a loop calls malloc or hc_malloc itself, as when the driver
# was one file and the shim a macro.
_DRIVER_COPTS = ["-flto"]
_DRIVER_LINKOPTS = ["-pthread", "-flto"]

def bench_allocators(name, stages, preload_libs):
    """Declares the drivers, their manifest, and `name`: both, for bench.py's data.

    Creates :driver_malloc (DRIVER_SRCS with shim_malloc.c: calls malloc/free,
    glibc's, or a peer's or a drop-in library's by LD_PRELOAD),
    :driver_<stage> for each stage package (with shim_hcmalloc.c), and
    :preload_<key> for each drop-in library. The manifest (`name`.tsv) has
    one line per allocator: name, kind (driver | preload), runfiles path.

    Args:
      name: the filegroup of the manifest and every file it names.
      stages: stage packages, each with a :hcmalloc cc_library.
      preload_libs: {allocator name: label of a malloc drop-in .so}.
    """
    native.cc_binary(
        name = "driver_malloc_build",
        srcs = DRIVER_SRCS + ["shim_malloc.c"],
        copts = _DRIVER_COPTS,
        linkopts = _DRIVER_LINKOPTS,
        deps = ["//common:api"],
        tags = ["manual"],
    )
    opt_binary(name = "driver_malloc", binary = ":driver_malloc_build")
    lines = []
    data = [":driver_malloc"]
    for stage in stages:
        native.cc_binary(
            name = "driver_%s_build" % stage,
            srcs = DRIVER_SRCS + ["shim_hcmalloc.c"],
            copts = _DRIVER_COPTS,
            linkopts = _DRIVER_LINKOPTS,
            deps = ["//%s:hcmalloc" % stage, "//common:api"],
            tags = ["manual"],
        )
        opt_binary(name = "driver_" + stage, binary = ":driver_%s_build" % stage)
        lines.append("%s\\tdriver\\t$(rootpath :driver_%s)" % (stage, stage))
        data.append(":driver_" + stage)
    for lib_name, label in preload_libs.items():
        opt_file(name = "preload_" + lib_name, src = label)
        lines.append("%s\\tpreload\\t$(rootpath :preload_%s)" % (lib_name, lib_name))
        data.append(":preload_" + lib_name)
    lines.insert(0, "malloc\\tdriver\\t$(rootpath :driver_malloc)")
    native.genrule(
        name = name + "_manifest",
        outs = [name + ".tsv"],
        srcs = data,
        cmd = "printf '%s\\n' > $@" % "\\n".join(lines),
    )

    # What bench.py needs at run time: the manifest and every file it names.
    native.filegroup(
        name = name,
        srcs = [":%s_manifest" % name],
        data = data,
    )
