"""skip_under: a target that cannot run under some build configurations.

    cc_test(
        name = "release_test",
        ...
        target_compatible_with = skip_under({
            "asan": "RSS limits do not hold under ASan's quarantine",
        }),
    )

The reason is for the reader (and `bazel query --output=build`); Bazel only
needs the keys. See tools/config/BUILD.
"""

def skip_under(reasons):
    """A select() for target_compatible_with: incompatible under each config named.

    Args:
      reasons: {config name ("asan", "tsan", "debug", "opt"): why it cannot run}.
    Returns:
      A select() usable as target_compatible_with.
    """
    branches = {"//tools/config:" + config: ["//tools/config:skip"] for config in reasons}
    branches["//conditions:default"] = []
    return select(branches)

def skip_preload_under_sanitizers():
    """For targets that LD_PRELOAD the drop-in: a sanitizer's runtime owns
    malloc and must be the first library loaded, so nothing can be preloaded
    in front of it."""
    return skip_under({
        "asan": "a sanitizer owns malloc and must load first: no drop-in",
        "tsan": "a sanitizer owns malloc and must load first: no drop-in",
    })

def skip_rss_bounds_under_sanitizers():
    """For tests that bound the resident set after memory goes back to the OS."""
    return skip_under({
        "asan": "ASan's quarantine holds freed blocks: RSS stays up",
        "tsan": "TSan's shadow memory doubles RSS and is not released",
    })
