// stage3_pagecache/span_treap_test.cc — the treap of long free spans on its
// own: records in an array stand for free spans (the treap reads only their
// length, start page and links), checked after every step against a sorted
// model of the same keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <utility>
#include <vector>

extern "C" {
#include "stage3_pagecache/span_treap.h"
}

namespace {

using Key = std::pair<size_t, uintptr_t>;  // (pages, start page): the treap's order

const char *AcceptAll(void *, const hc_span *) { return nullptr; }

// The spans in key order, as treap_check's in-order walk hands them over.
const char *Collect(void *arg, const hc_span *s) {
    static_cast<std::vector<Key> *>(arg)->push_back({s->page_count, s->start_page});
    return nullptr;
}

// A tree built from records with distinct start pages, and its model.
class SpanTreapTest : public ::testing::Test {
  protected:
    hc_span *root_ = nullptr;
    std::vector<hc_span> spans_;
    std::map<Key, hc_span *> model_;

    void Make(size_t n, std::mt19937 &rng) {
        spans_.assign(n, hc_span{});
        for (size_t i = 0; i < n; i++) {
            spans_[i].start_page = 1000 + 4096 * i;  // distinct, as free spans' are
            spans_[i].page_count = 129 + rng() % 40;  // many equal lengths: ties by address
        }
    }
    void Insert(hc_span *s) {
        treap_insert(&root_, s);
        model_[{s->page_count, s->start_page}] = s;
    }
    void Remove(hc_span *s) {
        treap_remove(&root_, s);
        model_.erase({s->page_count, s->start_page});
    }
    // The tree's invariants hold and it holds exactly the model's keys, in order.
    void ExpectMatchesModel() {
        std::vector<Key> seen;
        ASSERT_STREQ(treap_check(root_, Collect, &seen), nullptr);
        std::vector<Key> want;
        for (auto &kv : model_) want.push_back(kv.first);
        ASSERT_EQ(seen, want);
    }
};

TEST_F(SpanTreapTest, EmptyTreeFindsNothing) {
    uintptr_t at;
    EXPECT_EQ(treap_best_fit(nullptr, 1), nullptr);
    EXPECT_EQ(treap_longest(nullptr), nullptr);
    EXPECT_EQ(treap_find_aligned(nullptr, 1, 1, &at), nullptr);
    EXPECT_STREQ(treap_check(nullptr, AcceptAll, nullptr), nullptr);
}

TEST_F(SpanTreapTest, InsertAndRemoveInRandomOrderKeepKeysAndHeapOrder) {
    std::mt19937 rng(11);
    Make(2000, rng);
    std::vector<hc_span *> order;
    for (auto &s : spans_) order.push_back(&s);
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i = 0; i < order.size(); i++) {
        Insert(order[i]);
        if (i % 97 == 0) ExpectMatchesModel();
    }
    ExpectMatchesModel();
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i = 0; i < order.size(); i++) {
        Remove(order[i]);
        EXPECT_EQ(order[i]->left, nullptr) << "a removed span keeps no links";
        EXPECT_EQ(order[i]->right, nullptr);
        if (i % 97 == 0) ExpectMatchesModel();
    }
    EXPECT_EQ(root_, nullptr);
}

TEST_F(SpanTreapTest, SortedInsertsStillMakeAShallowTree) {
    // Keys in increasing order make a plain search tree a list; the random
    // priorities keep the treap's depth logarithmic.
    std::mt19937 rng(3);
    Make(4096, rng);
    for (size_t i = 0; i < spans_.size(); i++) spans_[i].page_count = 129 + i;
    for (auto &s : spans_) Insert(&s);
    ExpectMatchesModel();
    // The deepest node, by a walk of every path.
    std::vector<std::pair<hc_span *, int>> stack = {{root_, 1}};
    int depth = 0;
    while (!stack.empty()) {
        auto [t, d] = stack.back();
        stack.pop_back();
        if (t == nullptr) continue;
        depth = std::max(depth, d);
        stack.push_back({t->left, d + 1});
        stack.push_back({t->right, d + 1});
    }
    EXPECT_LE(depth, 40) << "4096 keys: expected depth about 2 ln n = 17";
}

TEST_F(SpanTreapTest, BestFitIsTheShortestLongEnoughLowestAddressFirst) {
    std::mt19937 rng(5);
    Make(1500, rng);
    for (auto &s : spans_) Insert(&s);
    for (size_t want = 120; want <= 175; want++) {
        auto best = model_.lower_bound({want, 0});
        hc_span *got = treap_best_fit(root_, want);
        if (best == model_.end()) {
            EXPECT_EQ(got, nullptr) << want << " pages: nothing is that long";
        } else {
            EXPECT_EQ(got, best->second) << want << " pages: the best fit is " << best->first.first
                                         << " pages at page " << best->first.second;
        }
    }
    EXPECT_EQ(treap_longest(root_), model_.rbegin()->second);
}

TEST_F(SpanTreapTest, AlignedSearchGivesTheFirstInKeyOrderThatHoldsTheRun) {
    std::mt19937 rng(9);
    Make(800, rng);
    for (size_t i = 0; i < spans_.size(); i++) spans_[i].start_page = 1000 + 4096 * i + rng() % 300;
    for (auto &s : spans_) Insert(&s);
    for (size_t align : {2, 64, 256, 1024}) {
        for (size_t pages : {129, 140, 160}) {
            // The model: the first key of at least `pages` whose span holds
            // `pages` pages from a multiple of `align`.
            hc_span *want = nullptr;
            uintptr_t want_at = 0;
            for (auto it = model_.lower_bound({pages, 0}); it != model_.end(); ++it) {
                hc_span *s = it->second;
                uintptr_t a = (s->start_page + align - 1) & ~(uintptr_t)(align - 1);
                if (a + pages <= s->start_page + s->page_count) {
                    want = s;
                    want_at = a;
                    break;
                }
            }
            uintptr_t at = 0;
            hc_span *got = treap_find_aligned(root_, pages, align, &at);
            EXPECT_EQ(got, want) << pages << " pages aligned to " << align;
            if (want != nullptr && got == want) {
                EXPECT_EQ(at, want_at);
                EXPECT_EQ(at % align, 0u);
            }
        }
    }
}

TEST_F(SpanTreapTest, CheckCatchesABrokenOrderAndABrokenHeap) {
    std::mt19937 rng(13);
    Make(64, rng);
    for (auto &s : spans_) Insert(&s);
    ASSERT_STREQ(treap_check(root_, AcceptAll, nullptr), nullptr);
    ASSERT_TRUE(root_->left != nullptr || root_->right != nullptr);
    // Children swapped: the keys are out of order.
    std::swap(root_->left, root_->right);
    EXPECT_NE(treap_check(root_, AcceptAll, nullptr), nullptr);
    std::swap(root_->left, root_->right);
    // The first span right of the root given a key below the root's: in
    // order with its own parent, out of order with the root above it.
    ASSERT_NE(root_->right, nullptr);
    hc_span *first_right = root_->right;
    while (first_right->left != nullptr) first_right = first_right->left;
    size_t saved_pages = first_right->page_count;
    first_right->page_count = root_->page_count - 1;
    EXPECT_STREQ(treap_check(root_, AcceptAll, nullptr),
                 "the long-span tree is out of (length, address) order");
    first_right->page_count = saved_pages;
    // And the mirror: the last span left of the root given a key above it.
    ASSERT_NE(root_->left, nullptr);
    hc_span *last_left = root_->left;
    while (last_left->right != nullptr) last_left = last_left->right;
    saved_pages = last_left->page_count;
    last_left->page_count = root_->page_count + 1;
    EXPECT_STREQ(treap_check(root_, AcceptAll, nullptr),
                 "the long-span tree is out of (length, address) order");
    last_left->page_count = saved_pages;
    // A child made the root (its subtree the other's): keys in order, yet
    // the root no longer outranks its child.
    hc_span *old_root = root_;
    hc_span *child = root_->right != nullptr ? root_->right : root_->left;
    hc_span saved_child = *child, saved_root = *old_root;
    if (child == old_root->right) {
        old_root->right = child->left;
        child->left = old_root;
    } else {
        old_root->left = child->right;
        child->right = old_root;
    }
    EXPECT_STREQ(treap_check(child, AcceptAll, nullptr), "the long-span tree is not a heap by priority");
    *child = saved_child;
    *old_root = saved_root;
    ASSERT_STREQ(treap_check(root_, AcceptAll, nullptr), nullptr);
    // The owner's check sees every span and its verdict stops the walk.
    EXPECT_STREQ(treap_check(root_, [](void *, const hc_span *) -> const char * { return "owner"; },
                             nullptr),
                 "owner");
}

}  // namespace
