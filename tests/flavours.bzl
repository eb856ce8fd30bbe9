"""Test flavours: the same test binary rebuilt for a checker.

A Starlark transition rebuilds the binary and everything below it (the stage,
common/ and googletest) with the flavour's flags, so `bazel test :all` runs
every flavour with no command-line flags:

  tsan      -fsanitize=thread; run without address randomisation
  asan      -fsanitize=address; common/track.h poisons free memory
  valgrind  -DHC_TRACK_VALGRIND=1: common/track.h announces every block to
            memcheck (the binary is run by a `runner`, tests/valgrind_test.sh)
  debug     what --config=debug builds: -O0 and -DHC_DEBUG=1 (double free and
            wrong-size checks)
  hardened  what --config=hardened builds: -DHC_HARDENED=1 (common/harden.h)

The checkers exclude each other, so a checker flavour first drops any
sanitizer that came from the command line (`bazel test --config=asan //...`
still builds the TSan and Valgrind flavours as themselves).
"""

_FLAVOURS = {
    "tsan": struct(
        copts = ["-fsanitize=thread", "-DHC_TSAN=1"],
        linkopts = ["-fsanitize=thread"],
        compilation_mode = None,
        checker = True,
        # TSan needs its shadow memory at fixed addresses; with address space
        # randomisation a mapping can land there, so run without it when we can.
        no_aslr = True,
        options = ("TSAN_OPTIONS", "halt_on_error=1 second_deadlock_stack=1"),
    ),
    "asan": struct(
        copts = ["-fsanitize=address", "-fno-omit-frame-pointer", "-DHC_ASAN=1"],
        linkopts = ["-fsanitize=address"],
        compilation_mode = None,
        checker = True,
        no_aslr = False,
        # LeakSanitizer needs ptrace, which a sandbox may refuse; hcmalloc's
        # own leaks are memcheck's job (the valgrind flavour).
        options = ("ASAN_OPTIONS", "halt_on_error=1 detect_leaks=0"),
    ),
    "valgrind": struct(
        copts = ["-DHC_TRACK_VALGRIND=1"],
        linkopts = [],
        compilation_mode = None,
        checker = True,
        no_aslr = False,
        options = None,
    ),
    "debug": struct(
        copts = ["-DHC_DEBUG=1"],
        linkopts = [],
        compilation_mode = "dbg",
        checker = False,
        no_aslr = False,
        options = None,
    ),
    "hardened": struct(
        copts = ["-DHC_HARDENED=1"],
        linkopts = [],
        compilation_mode = None,
        checker = False,
        no_aslr = False,
        options = None,
    ),
}

# Flags a checker flavour removes from what the command line gave. The
# hardened build's too: a checker owns free memory (it poisons it, or
# watches every byte of it), and the hardened tags in free objects would
# only stand in its way (`bazel test --config=hardened` still builds the
# checker flavours as themselves).
_CHECKER_FLAGS = ["-DHC_ASAN=1", "-DHC_TSAN=1", "-DHC_TRACK_VALGRIND=1", "-DHC_HARDENED=1"]

def _without_checkers(flags):
    return [f for f in flags if not f.startswith("-fsanitize") and f not in _CHECKER_FLAGS]

def _flavour_transition_impl(settings, attr):
    flavour = _FLAVOURS[attr.flavour]
    copts = settings["//command_line_option:copt"]
    linkopts = settings["//command_line_option:linkopt"]
    if flavour.checker:
        copts = _without_checkers(copts)
        linkopts = _without_checkers(linkopts)
    return {
        "//command_line_option:copt": copts + flavour.copts,
        "//command_line_option:linkopt": linkopts + flavour.linkopts,
        "//command_line_option:compilation_mode": flavour.compilation_mode or settings["//command_line_option:compilation_mode"],
    }

_flavour_transition = transition(
    implementation = _flavour_transition_impl,
    inputs = [
        "//command_line_option:copt",
        "//command_line_option:linkopt",
        "//command_line_option:compilation_mode",
    ],
    outputs = [
        "//command_line_option:copt",
        "//command_line_option:linkopt",
        "//command_line_option:compilation_mode",
    ],
)

def _runfile(ctx, file):
    # `bazel run` starts beside the runfiles tree; a test starts inside it
    # (hence the launcher's fallback to the short path).
    return "\"$0.runfiles/%s/%s\"" % (ctx.workspace_name, file.short_path)

def _flavour_test_impl(ctx):
    flavour = _FLAVOURS[ctx.attr.flavour]
    binary = ctx.attr.binary[0]
    exe = binary[DefaultInfo].files_to_run.executable
    launcher = ctx.actions.declare_file(ctx.label.name + ".sh")

    lines = [
        "#!/bin/bash",
        "exe=%s" % _runfile(ctx, exe),
        "[ -x \"$exe\" ] || exe=\"%s\"" % exe.short_path,
        "command=(\"$exe\")",
    ]
    runfiles = ctx.runfiles(files = [exe]).merge(binary[DefaultInfo].default_runfiles)
    if ctx.attr.runner:
        runner = ctx.executable.runner
        lines += [
            "runner=%s" % _runfile(ctx, runner),
            "[ -x \"$runner\" ] || runner=\"%s\"" % runner.short_path,
            "command=(\"$runner\" \"$exe\")",
        ]
        runfiles = runfiles.merge(ctx.runfiles(files = [runner])).merge(ctx.attr.runner[DefaultInfo].default_runfiles)
    if flavour.options:
        name, value = flavour.options
        lines.append("export %s=\"%s ${%s:-}\"" % (name, value, name))
    if flavour.no_aslr:
        lines += [
            "if setarch \"$(uname -m)\" -R true 2>/dev/null; then",
            "  command=(setarch \"$(uname -m)\" -R \"${command[@]}\")",
            "fi",
        ]
    lines += ["exec \"${command[@]}\" \"$@\"", ""]
    ctx.actions.write(output = launcher, is_executable = True, content = "\n".join(lines))

    for target in ctx.attr.data:
        runfiles = runfiles.merge(ctx.runfiles(files = target[DefaultInfo].files.to_list()))
        runfiles = runfiles.merge(target[DefaultInfo].default_runfiles)
    return [
        DefaultInfo(executable = launcher, runfiles = runfiles),
        testing.TestEnvironment(ctx.attr.test_env),
    ]

flavour_test = rule(
    implementation = _flavour_test_impl,
    test = True,
    attrs = {
        "binary": attr.label(cfg = _flavour_transition, executable = True, mandatory = True),
        "flavour": attr.string(mandatory = True, values = _FLAVOURS.keys()),
        "runner": attr.label(
            cfg = "target",
            executable = True,
            doc = "A script run as `runner BINARY ARGS...` instead of the binary itself.",
        ),
        "data": attr.label_list(allow_files = True, doc = "Files the runner or binary reads."),
        "test_env": attr.string_dict(doc = "Environment for the test run."),
        "_allowlist_function_transition": attr.label(
            default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
        ),
    },
    doc = "Runs `binary` rebuilt, with everything it links, for one flavour.",
)

def tsan_test(name, binary, test_env = {}, **kwargs):
    """Runs `binary` built with -fsanitize=thread (and everything it links)."""
    flavour_test(name = name, flavour = "tsan", binary = binary, test_env = test_env, **kwargs)

def debug_test(name, binary, test_env = {}, **kwargs):
    """Runs `binary` built as --config=debug builds it (-O0, HC_DEBUG=1)."""
    flavour_test(name = name, flavour = "debug", binary = binary, test_env = test_env, **kwargs)

def hardened_test(name, binary, test_env = {}, **kwargs):
    """Runs `binary` built as --config=hardened builds it (HC_HARDENED=1)."""
    flavour_test(name = name, flavour = "hardened", binary = binary, test_env = test_env, **kwargs)

def _flavour_file_impl(ctx):
    src = ctx.files.src[0]
    out = ctx.actions.declare_file(ctx.attr.out or ctx.label.name)
    ctx.actions.run_shell(
        inputs = [src],
        outputs = [out],
        command = "cp \"$1\" \"$2\"",
        arguments = [src.path, out.path],
        mnemonic = "FlavourCopy",
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

flavour_file = rule(
    implementation = _flavour_file_impl,
    attrs = {
        "src": attr.label(cfg = _flavour_transition, allow_files = True, mandatory = True),
        "flavour": attr.string(mandatory = True, values = _FLAVOURS.keys()),
        "out": attr.string(doc = "The output's name (default: the target's)."),
        "_allowlist_function_transition": attr.label(
            default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
        ),
    },
    doc = "`src` (one file: a shared library) rebuilt, with everything it links, for one flavour, under a name of its own.",
)
