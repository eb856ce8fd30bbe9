"""The two shapes of stage 4's check stanzas (stage4_reclaim/checks/BUILD).

A check is a shell script run on built things: the drop-in libraries, the
check programs, and sources the script compiles itself. The script reads
them as arguments, in order, by their runfiles paths:

    hc_script_test(
        name = "dropin_exports_test",
        script = "dropin_exports_test.sh",
        inputs = ["//stage4_reclaim:libhcmalloc.so"],
    )

gives sh_test(srcs = [script], args = ["$(rootpath X)" for X in inputs],
data = inputs): each input named once, not twice. hc_preload_test is the
same for a check that preloads a drop-in, which no sanitizer build can do
(tools/config/defs.bzl, skip_preload_under_sanitizers).
"""

load("//tools/config:defs.bzl", "skip_preload_under_sanitizers")

def hc_script_test(name, script, inputs, size = "small", **kwargs):
    """An sh_test running `script` with each of `inputs` as an argument.

    Args:
      name: the test's name.
      script: the shell script (a file of the package).
      inputs: labels, passed to the script in this order by their runfiles
        paths ($(rootpath)), and in its runfiles.
      size: the test's size.
      **kwargs: any other sh_test attribute (target_compatible_with, env).
    """
    native.sh_test(
        name = name,
        size = size,
        srcs = [script],
        args = ["$(rootpath %s)" % label for label in inputs],
        data = inputs,
        **kwargs
    )

def hc_preload_test(name, script, inputs, size = "small", **kwargs):
    """hc_script_test for a script that preloads a drop-in: not run under
    a sanitizer, whose runtime owns malloc and must load first."""
    hc_script_test(
        name = name,
        script = script,
        inputs = inputs,
        size = size,
        target_compatible_with = skip_preload_under_sanitizers(),
        **kwargs
    )
