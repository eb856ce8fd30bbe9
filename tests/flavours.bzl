"""Test flavours: the same test binary rebuilt with other compile flags.

A Starlark transition adds flags to every C/C++ compile and link below the
test (the stage, common/ and googletest), so `bazel test :all` runs each
flavour with no command-line flags:
  tsan_test   -fsanitize=thread
  debug_test  -DHC_DEBUG=1 (what --config=debug switches on: double-free and
              wrong-size checks)
"""

def _tsan_transition_impl(settings, attr):
    return {
        "//command_line_option:copt": settings["//command_line_option:copt"] + [
            "-fsanitize=thread",
            "-DHC_TSAN=1",
        ],
        "//command_line_option:linkopt": settings["//command_line_option:linkopt"] + [
            "-fsanitize=thread",
        ],
    }

_tsan_transition = transition(
    implementation = _tsan_transition_impl,
    inputs = ["//command_line_option:copt", "//command_line_option:linkopt"],
    outputs = ["//command_line_option:copt", "//command_line_option:linkopt"],
)

def _debug_transition_impl(settings, attr):
    return {
        "//command_line_option:copt": settings["//command_line_option:copt"] + ["-DHC_DEBUG=1"],
    }

_debug_transition = transition(
    implementation = _debug_transition_impl,
    inputs = ["//command_line_option:copt"],
    outputs = ["//command_line_option:copt"],
)

def _launch(ctx, run_lines):
    """A test launcher that finds the rebuilt binary as $exe, then runs `run_lines`."""
    binary = ctx.attr.binary[0]
    exe = binary[DefaultInfo].files_to_run.executable
    launcher = ctx.actions.declare_file(ctx.label.name + ".sh")
    ctx.actions.write(
        output = launcher,
        is_executable = True,
        content = "\n".join([
            "#!/bin/bash",
            "exe=\"$0.runfiles/%s/%s\"" % (ctx.workspace_name, exe.short_path),
            "[ -x \"$exe\" ] || exe=\"%s\"" % exe.short_path,
        ] + run_lines + [""]),
    )
    runfiles = ctx.runfiles(files = [exe]).merge(binary[DefaultInfo].default_runfiles)
    return [
        DefaultInfo(executable = launcher, runfiles = runfiles),
        testing.TestEnvironment(ctx.attr.test_env),
    ]

def _tsan_test_impl(ctx):
    # TSan needs its shadow memory at fixed addresses; with address space
    # randomisation a mapping can land there, so run without it when we can.
    return _launch(ctx, [
        "export TSAN_OPTIONS=\"halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}\"",
        "if setarch \"$(uname -m)\" -R true 2>/dev/null; then",
        "  exec setarch \"$(uname -m)\" -R \"$exe\" \"$@\"",
        "fi",
        "exec \"$exe\" \"$@\"",
    ])

def _debug_test_impl(ctx):
    return _launch(ctx, ["exec \"$exe\" \"$@\""])

def _flavour_attrs(cfg):
    return {
        "binary": attr.label(cfg = cfg, executable = True, mandatory = True),
        "test_env": attr.string_dict(doc = "Environment for the test run."),
        "_allowlist_function_transition": attr.label(
            default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
        ),
    }

tsan_test = rule(
    implementation = _tsan_test_impl,
    test = True,
    attrs = _flavour_attrs(_tsan_transition),
    doc = "Runs `binary` built with -fsanitize=thread (and everything it links).",
)

debug_test = rule(
    implementation = _debug_test_impl,
    test = True,
    attrs = _flavour_attrs(_debug_transition),
    doc = "Runs `binary` built with -DHC_DEBUG=1 (and everything it links).",
)
