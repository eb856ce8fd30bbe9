// stage3_pagecache/heap_map_test.cc — hc_dump_heap_svg: the picture is
// well-formed XML, its totals are hc_get_stats() at that moment, and the
// spans it draws add up to the page cache's own census. Built for stage 3
// and, by label, for stage 4 (where some free pages are released).
#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <string>
#include <vector>

extern "C" {
#include "common/hcmalloc.h"
#include "stage3_pagecache/heap_map.h"
#include "stage3_pagecache/page_cache.h"
}

#include "tests/test_util.h"

namespace {

// A minimal XML reader, enough for what the writer emits: the declaration,
// elements with quoted attributes, text without markup. Fails the test on
// anything unbalanced or malformed, and collects every element's attributes.
struct Element {
    std::string name;
    std::map<std::string, std::string> attrs;
};

std::vector<Element> ParseXml(const std::string &s) {
    std::vector<Element> all;
    std::vector<std::string> open;
    size_t i = 0;
    bool root_seen = false;
    while (i < s.size()) {
        if (s[i] != '<') {
            if (s[i] == '&' || s[i] == '>') ADD_FAILURE() << "bare '" << s[i] << "' at " << i;
            if (open.empty() && !isspace((unsigned char)s[i])) ADD_FAILURE() << "text outside the root at " << i;
            i++;
            continue;
        }
        size_t end = s.find('>', i);
        if (end == std::string::npos) {
            ADD_FAILURE() << "unterminated tag at " << i;
            break;
        }
        std::string tag = s.substr(i + 1, end - i - 1);
        i = end + 1;
        if (tag[0] == '?') continue;  // <?xml ...?>
        if (tag[0] == '/') {
            if (open.empty() || open.back() != tag.substr(1)) {
                ADD_FAILURE() << "</" << tag.substr(1) << "> closes " << (open.empty() ? "nothing" : open.back());
                return all;
            }
            open.pop_back();
            continue;
        }
        bool self_closing = tag.back() == '/';
        if (self_closing) tag.pop_back();
        Element e;
        size_t p = 0;
        while (p < tag.size() && !isspace((unsigned char)tag[p])) p++;
        e.name = tag.substr(0, p);
        while (true) {
            while (p < tag.size() && isspace((unsigned char)tag[p])) p++;
            if (p >= tag.size()) break;
            size_t eq = tag.find('=', p);
            if (eq == std::string::npos || eq + 1 >= tag.size() || tag[eq + 1] != '"') {
                ADD_FAILURE() << "bad attribute in <" << tag << ">";
                return all;
            }
            size_t close = tag.find('"', eq + 2);
            if (close == std::string::npos) {
                ADD_FAILURE() << "unterminated attribute in <" << tag << ">";
                return all;
            }
            e.attrs[tag.substr(p, eq - p)] = tag.substr(eq + 2, close - eq - 2);
            p = close + 1;
        }
        if (open.empty()) {
            EXPECT_FALSE(root_seen) << "two root elements";
            root_seen = true;
        }
        if (!self_closing) open.push_back(e.name);
        all.push_back(e);
    }
    EXPECT_TRUE(open.empty()) << "unclosed <" << (open.empty() ? "" : open.back()) << ">";
    EXPECT_TRUE(root_seen);
    return all;
}

struct Picture {
    std::map<std::string, size_t> totals;  // data-total -> data-bytes
    std::map<std::string, size_t> pages;   // data-kind -> sum of data-pages
};

Picture Read(const std::string &svg) {
    std::vector<Element> elements = ParseXml(svg);
    EXPECT_FALSE(elements.empty());
    if (!elements.empty()) {
        EXPECT_EQ(elements[0].name, "svg");
    }
    Picture pic;
    for (const Element &e : elements) {
        auto total = e.attrs.find("data-total");
        if (total != e.attrs.end()) pic.totals[total->second] = std::stoull(e.attrs.at("data-bytes"));
        auto kind = e.attrs.find("data-kind");
        if (kind != e.attrs.end()) pic.pages[kind->second] += std::stoull(e.attrs.at("data-pages"));
    }
    return pic;
}

bool SameStats(const hc_stats &a, const hc_stats &b) {
    return a.bytes_in_use == b.bytes_in_use && a.thread_cache_bytes == b.thread_cache_bytes &&
           a.central_cache_bytes == b.central_cache_bytes &&
           a.page_cache_free_bytes == b.page_cache_free_bytes && a.released_bytes == b.released_bytes &&
           a.os_mapped_bytes == b.os_mapped_bytes && a.metadata_bytes == b.metadata_bytes;
}

// Draws the heap and checks it against the stats and the census of the
// same (quiet) moment.
void CheckPicture(const std::string &name) {
    hc_stats before, after;
    pc_census census;
    hc_get_stats(&before);
    pc_get_census(&census);
    std::string svg = hc_test::CaptureFd(hc_dump_heap_svg, name);
    hc_get_stats(&after);
    // Drawing allocates nothing: the stats did not move.
    ASSERT_TRUE(SameStats(before, after));
    Picture pic = Read(svg);

    EXPECT_EQ(pic.totals["os_mapped_bytes"], before.os_mapped_bytes);
    EXPECT_EQ(pic.totals["bytes_in_use"], before.bytes_in_use);
    EXPECT_EQ(pic.totals["thread_cache_bytes"], before.thread_cache_bytes);
    EXPECT_EQ(pic.totals["central_cache_bytes"], before.central_cache_bytes);
    EXPECT_EQ(pic.totals["page_cache_free_bytes"], before.page_cache_free_bytes);
    EXPECT_EQ(pic.totals["released_bytes"], before.released_bytes);
    EXPECT_EQ(pic.totals["metadata_bytes"], before.metadata_bytes);

    // Every page of every span is drawn once, in its state.
    EXPECT_EQ(pic.pages["free"] * HC_PAGE_SIZE, before.page_cache_free_bytes);
    EXPECT_EQ(pic.pages["released"] * HC_PAGE_SIZE, before.released_bytes);
    EXPECT_EQ(pic.pages["small"], census.small_pages);
    EXPECT_EQ(pic.pages["large"], census.large_pages);
    EXPECT_EQ(pic.pages["direct"], census.direct_pages);
    EXPECT_EQ(pic.pages["free"] + pic.pages["released"], census.free_pages);
    EXPECT_EQ(pic.pages["small"] + pic.pages["large"] + pic.pages["free"] + pic.pages["released"],
              census.heap_pages);
}

TEST(HeapMap, EmptyHeapIsAPictureToo) {
    // Nothing allocated in this process by hcmalloc yet (gtest uses libc's
    // malloc): a well-formed picture with no strip.
    CheckPicture("heap_map_empty.svg");
}

TEST(HeapMap, TotalsAndSpansMatchTheStats) {
    std::vector<std::pair<void *, size_t>> blocks;
    auto take = [&](size_t size, int n) {
        for (int i = 0; i < n; i++) {
            void *p = hc_malloc(size);
            ASSERT_NE(p, nullptr);
            blocks.push_back({p, size});
        }
    };
    take(48, 3000);                 // one class, many objects
    take(3000, 400);                // another
    take(200 * 1024, 12);           // the largest classes
    take(1 << 20, 6);               // large blocks from the page cache
    take((size_t)80 << 20, 1);      // mapped directly
    // Free every other block: half-used spans, free spans between large ones.
    for (size_t i = 0; i < blocks.size(); i += 2) hc_free(blocks[i].first);
    CheckPicture("heap_map_half_freed.svg");

    // Give the free pages back (stage 4) and draw again: now released.
    hc_release_free_memory();
    CheckPicture("heap_map_released.svg");
    if (hc_features() & HC_FEATURE_RELEASE_TO_OS) {
        hc_stats s;
        hc_get_stats(&s);
        EXPECT_GT(s.released_bytes, 0u);
    }
    for (size_t i = 1; i < blocks.size(); i += 2) hc_free(blocks[i].first);
    hc_thread_flush();
    CheckPicture("heap_map_all_freed.svg");
}

}  // namespace
