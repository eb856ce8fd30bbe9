// stage4_reclaim/checks/profile_sized_delete.cc — sampled blocks freed through
// sized operator delete (hc_free_sized, which a plain build serves without
// a page-map lookup) must leave the profiler's live set. Run with every
// allocation sampled (HCMALLOC_PROFILE_SAMPLE_BYTES=1) and the leak check:
// site_deleted must not be reported, site_kept's 10 objects must.
#include <cstdio>

struct Record {
    char bytes[200];
};

static Record *volatile sink;

__attribute__((noinline)) Record *site_deleted() { return sink = new Record(); }
__attribute__((noinline)) Record *site_kept() { return sink = new Record(); }

int main() {
    for (int i = 0; i < 1000; i++)
        delete site_deleted(); // operator delete(void *, size_t): sized
    for (int i = 0; i < 10; i++)
        site_kept();
    std::printf("profile_sized_delete: done\n");
    return 0;
}
