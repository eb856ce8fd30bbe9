/* stage3_pagecache/heap_map.c — the heap as an SVG picture (stages 3 and 4).
 *
 * Not a layer of its own: a reader of the page cache, shared by label with
 * stage 4 (whose page cache also knows which free pages went back to the
 * OS). Two walks of the spans (pc_visit_spans): the first measures the heap
 * to choose a scale, the second draws. Runs of neighbouring spans in the
 * same state and class are drawn as one shape, so a heap of thousands of
 * one-page spans still makes a small file.
 *
 * Everything is formatted by hand into a fixed buffer on the stack and
 * written with write(2) (common/fd_out.h): no stdio, no malloc, so the allocator can draw
 * itself while it is the process's malloc.
 * May touch: pc_visit_spans (under the page cache lock), hc_get_stats,
 * write(2). Never the allocator's state. */
#include "stage3_pagecache/heap_map.h"

#include <stdint.h>

#include "common/compiler.h"
#include "common/fd_out.h"
#include "common/hcmalloc.h"
#include "common/size_class.h"
#include "stage3_pagecache/page_cache.h"

/* ---- Output (common/fd_out.h): numbers as SVG wants them ------------------------- */

/* `hundredths` / 100 with two decimals: SVG coordinates. */
static void put_centi(hc_fd_out *o, uint64_t hundredths) { fd_out_put_fixed(o, hundredths, 2); }

/* Bytes as "12.3 MiB" (or KiB below 1 MiB), rounded to a tenth. */
static void put_size(hc_fd_out *o, uint64_t bytes) {
    int mib = bytes >= ((uint64_t)1 << 20);
    fd_out_put_fixed(o, mib ? (bytes * 10 + (1 << 19)) >> 20 : (bytes * 10 + (1 << 9)) >> 10, 1);
    fd_out_put(o, mib ? " MiB" : " KiB");
}

/* ---- Colours ---------------------------------------------------------------------- */

typedef enum run_kind { KIND_SMALL, KIND_LARGE, KIND_DIRECT, KIND_FREE, KIND_RELEASED, KIND_COUNT } run_kind;

static const char *const kind_name[KIND_COUNT] = {"small", "large", "direct", "free", "released"};
static const char *const kind_label[KIND_COUNT] = {
    "small objects (hue: size class)", "large block", "directly mapped block",
    "free, backed (page cache)", "free, released to the OS"};
static const char *const kind_colour[KIND_COUNT] = {"#4e79a7", "#f28e2b", "#9c4a00", "#8cd17d",
                                                    "#d7d7d7"};

/* A small class's colour: hues from blue (8 B) through purple to red
 * (256 KiB), three lightnesses in turn so that neighbouring classes differ. */
static void put_class_colour(hc_fd_out *o, unsigned cls) {
    unsigned hue = 200 + 150 * cls / HC_NUM_CLASSES; /* degrees, 200..350 */
    unsigned light = 38 + 12 * (cls % 3);             /* percent */
    /* hsl -> rgb, saturation 65%, in integers (0..255 per channel). */
    int c = (int)((100 - (light > 50 ? 2 * light - 100 : 100 - 2 * light)) * 65 * 255 / 10000);
    int h60 = (int)(hue % 360) * 100 / 60; /* hue / 60, in hundredths */
    int rem = h60 % 200 - 100;
    int x = c * (100 - (rem < 0 ? -rem : rem)) / 100;
    int m = (int)(light * 255 / 100) - c / 2;
    int rgb[3];
    switch (h60 / 100) {
    case 0: rgb[0] = c, rgb[1] = x, rgb[2] = 0; break;
    case 1: rgb[0] = x, rgb[1] = c, rgb[2] = 0; break;
    case 2: rgb[0] = 0, rgb[1] = c, rgb[2] = x; break;
    case 3: rgb[0] = 0, rgb[1] = x, rgb[2] = c; break;
    case 4: rgb[0] = x, rgb[1] = 0, rgb[2] = c; break;
    default: rgb[0] = c, rgb[1] = 0, rgb[2] = x; break;
    }
    char text[8] = "#";
    for (int i = 0; i < 3; i++) {
        int v = rgb[i] + m;
        v = v < 0 ? 0 : v > 255 ? 255 : v;
        text[1 + 2 * i] = "0123456789abcdef"[v >> 4];
        text[2 + 2 * i] = "0123456789abcdef"[v & 15];
    }
    text[7] = '\0';
    fd_out_put(o, text);
}

/* ---- Layout ----------------------------------------------------------------------- */

#define MAP_WIDTH      1000
#define STRIP_X        170   /* strips start here; their labels are to the left */
#define STRIP_WIDTH    810
#define ROW_HEIGHT     14
#define ROW_GAP        3
#define STRIP_GAP      14
#define HEADER_HEIGHT  250
#define MIN_ROW_PAGES  64    /* one row = 512 KiB at least: a page is 12 px wide */
#define ROW_CHOICES    20    /* rows of 64 << k pages, k < ROW_CHOICES */
#define MAX_ROWS       48    /* the smallest scale that fits in this many rows */

/* What the first walk measures. */
typedef struct heap_shape {
    uintptr_t strip_end;  /* one past the last page of the strip being walked */
    size_t strip_pages;
    size_t strips;
    size_t rows[ROW_CHOICES]; /* rows needed at 64 << k pages per row */
    size_t pages[KIND_COUNT];
} heap_shape;

static size_t rows_for(size_t pages, size_t row_pages) { return (pages + row_pages - 1) / row_pages; }

static void shape_end_strip(heap_shape *h) {
    if (h->strip_pages == 0)
        return;
    for (int k = 0; k < ROW_CHOICES; k++)
        h->rows[k] += rows_for(h->strip_pages, (size_t)MIN_ROW_PAGES << k);
    h->strip_pages = 0;
}

static void shape_visit(void *arg, const pc_span_view *s) {
    heap_shape *h = arg;
    if (s->start_page != h->strip_end || h->strips == 0) {
        shape_end_strip(h);
        h->strips++;
    }
    h->strip_pages += s->page_count;
    h->strip_end = s->start_page + s->page_count;
}

/* The drawing walk: spans merge into runs of one kind (and class). */
typedef struct heap_draw {
    hc_fd_out *out;
    size_t row_pages;
    size_t strips;            /* strips started so far */
    uintptr_t strip_start;    /* first page of the current strip */
    uintptr_t strip_end;
    uint64_t strip_y;         /* hundredths of px: top of the current strip's first row */
    uint64_t next_strip_y;
    /* The run being collected, not yet drawn. */
    run_kind kind;
    unsigned size_class;
    uintptr_t run_start;
    size_t run_pages;
    size_t run_spans;
} heap_draw;

/* Draws pages [start, start + pages) of the current strip, row by row. */
static void draw_pages(heap_draw *d, uintptr_t start, size_t pages) {
    hc_fd_out *o = d->out;
    size_t offset = start - d->strip_start;
    while (pages > 0) {
        size_t row = offset / d->row_pages, col = offset % d->row_pages;
        size_t piece = d->row_pages - col < pages ? d->row_pages - col : pages;
        uint64_t x0 = (uint64_t)col * STRIP_WIDTH * 100 / d->row_pages;
        uint64_t x1 = (uint64_t)(col + piece) * STRIP_WIDTH * 100 / d->row_pages;
        fd_out_put(o, "<rect x=\"");
        put_centi(o, STRIP_X * 100 + x0);
        fd_out_put(o, "\" y=\"");
        put_centi(o, d->strip_y + row * (ROW_HEIGHT + ROW_GAP) * 100);
        fd_out_put(o, "\" width=\"");
        put_centi(o, x1 - x0 > 0 ? x1 - x0 : 1);
        fd_out_put(o, "\" height=\"" HC_STRINGIFY(ROW_HEIGHT) "\"/>");
        offset += piece;
        pages -= piece;
    }
}

/* One group per run: its kind, pages and spans as data attributes (the test
 * adds them up), a tooltip, then its shapes. */
static void draw_group(heap_draw *d, run_kind kind, uintptr_t start, size_t pages) {
    hc_fd_out *o = d->out;
    fd_out_put(o, "<g data-kind=\"");
    fd_out_put(o, kind_name[kind]);
    fd_out_put(o, "\" data-pages=\"");
    fd_out_put_u(o, pages);
    fd_out_put(o, "\" fill=\"");
    if (kind == KIND_SMALL)
        put_class_colour(o, d->size_class);
    else
        fd_out_put(o, kind_colour[kind]);
    fd_out_put(o, "\"><title>");
    fd_out_put_hex(o, (uint64_t)start << HC_PAGE_SHIFT);
    fd_out_put(o, ": ");
    fd_out_put_u(o, d->run_spans);
    fd_out_put(o, d->run_spans == 1 ? " span, " : " spans, ");
    fd_out_put_u(o, pages);
    fd_out_put(o, pages == 1 ? " page (" : " pages (");
    put_size(o, (uint64_t)pages << HC_PAGE_SHIFT);
    fd_out_put(o, "), ");
    fd_out_put(o, kind_label[kind]);
    if (kind == KIND_SMALL) {
        fd_out_put(o, ": class ");
        fd_out_put_u(o, d->size_class);
        fd_out_put(o, ", ");
        fd_out_put_u(o, sc_size(d->size_class));
        fd_out_put(o, " B objects");
    }
    fd_out_put(o, "</title>");
    draw_pages(d, start, pages);
    fd_out_put(o, "</g>\n");
}

static void draw_run(heap_draw *d) {
    if (d->run_pages > 0)
        draw_group(d, d->kind, d->run_start, d->run_pages);
    d->run_pages = 0;
    d->run_spans = 0;
}

static void draw_strip_label(heap_draw *d) {
    hc_fd_out *o = d->out;
    size_t pages = d->strip_end - d->strip_start;
    fd_out_put(o, "<text class=\"label\" x=\"");
    fd_out_put_u(o, STRIP_X - 8);
    fd_out_put(o, "\" y=\"");
    put_centi(o, d->strip_y + 1100);
    fd_out_put(o, "\" text-anchor=\"end\">");
    fd_out_put_hex(o, (uint64_t)d->strip_start << HC_PAGE_SHIFT);
    fd_out_put(o, "</text><text class=\"label\" x=\"");
    fd_out_put_u(o, STRIP_X - 8);
    fd_out_put(o, "\" y=\"");
    put_centi(o, d->strip_y + 1100 + (ROW_HEIGHT + ROW_GAP) * 100);
    fd_out_put(o, "\" text-anchor=\"end\">");
    put_size(o, (uint64_t)pages << HC_PAGE_SHIFT);
    fd_out_put(o, "</text>\n");
}

/* Ends the strip: its label, and the outline of its rows. */
static void draw_end_strip(heap_draw *d) {
    if (d->strips == 0)
        return;
    draw_run(d);
    draw_strip_label(d);
    size_t pages = d->strip_end - d->strip_start;
    size_t rows = rows_for(pages, d->row_pages);
    d->next_strip_y = d->strip_y + (rows * (ROW_HEIGHT + ROW_GAP) + STRIP_GAP) * 100;
}

static void draw_visit(void *arg, const pc_span_view *s) {
    heap_draw *d = arg;
    if (d->strips == 0 || s->start_page != d->strip_end) {
        draw_end_strip(d);
        d->strips++;
        d->strip_start = s->start_page;
        d->strip_y = d->next_strip_y;
    }
    d->strip_end = s->start_page + s->page_count;
    if (s->state == SPAN_FREE) {
        /* Which pages are backed is not recorded (page_cache.c): the
         * backed share is drawn first. Free spans never touch each other,
         * so each is a run of its own. */
        draw_run(d);
        size_t backed = s->backed_pages < s->page_count ? s->backed_pages : s->page_count;
        d->run_spans = 1;
        if (backed > 0)
            draw_group(d, KIND_FREE, s->start_page, backed);
        if (backed < s->page_count)
            draw_group(d, KIND_RELEASED, s->start_page + backed, s->page_count - backed);
        d->run_spans = 0;
        return;
    }
    run_kind kind = s->state == SPAN_SMALL ? KIND_SMALL : s->direct ? KIND_DIRECT : KIND_LARGE;
    if (d->run_pages == 0 || kind != d->kind || s->size_class != d->size_class) {
        draw_run(d);
        d->kind = kind;
        d->size_class = s->size_class;
        d->run_start = s->start_page;
    }
    d->run_pages += s->page_count;
    d->run_spans++;
}

/* ---- Header: title, totals, legend ------------------------------------------------- */

/* `<TAG x="X" y="Y"`: the start of an element placed at (x, y); the caller
 * adds its other attributes and closes it. */
static void put_element_at(hc_fd_out *o, const char *tag, int x, int y) {
    fd_out_put(o, "<");
    fd_out_put(o, tag);
    fd_out_put(o, " x=\"");
    fd_out_put_u(o, (uint64_t)x);
    fd_out_put(o, "\" y=\"");
    fd_out_put_u(o, (uint64_t)y);
    fd_out_put(o, "\"");
}

static void put_text(hc_fd_out *o, int x, int y, const char *cls, const char *text) {
    put_element_at(o, "text", x, y);
    fd_out_put(o, " class=\"");
    fd_out_put(o, cls);
    fd_out_put(o, "\">");
    fd_out_put(o, text);
    fd_out_put(o, "</text>\n");
}

/* One line of totals: the test reads data-total and data-bytes. */
static void put_total(hc_fd_out *o, int x, int y, const char *name, const char *label, size_t bytes) {
    put_element_at(o, "text", x, y);
    fd_out_put(o, " data-total=\"");
    fd_out_put(o, name);
    fd_out_put(o, "\" data-bytes=\"");
    fd_out_put_u(o, bytes);
    fd_out_put(o, "\">");
    fd_out_put(o, label);
    fd_out_put(o, ": <tspan class=\"num\">");
    put_size(o, bytes);
    fd_out_put(o, "</tspan></text>\n");
}

static void put_swatch(hc_fd_out *o, int x, int y, const char *colour) {
    put_element_at(o, "rect", x, y);
    fd_out_put(o, " width=\"14\" height=\"14\" fill=\"");
    fd_out_put(o, colour);
    fd_out_put(o, "\" stroke=\"#666\" stroke-width=\"0.5\"/>");
}

static void put_header(hc_fd_out *o, const hc_stats *st, const heap_shape *h, size_t row_pages,
                       uint64_t height) {
    fd_out_put(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
           "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" HC_STRINGIFY(MAP_WIDTH) "\" height=\"");
    fd_out_put_u(o, height);
    fd_out_put(o, "\" viewBox=\"0 0 " HC_STRINGIFY(MAP_WIDTH) " ");
    fd_out_put_u(o, height);
    fd_out_put(o, "\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"12\">\n"
           "<style>.title{font-size:18px;font-weight:bold}.sub{fill:#555}"
           ".head{font-weight:bold}.label{fill:#444;font-size:11px}.num{font-weight:bold}</style>\n"
           "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    fd_out_put(o, "<text x=\"20\" y=\"28\" class=\"title\">hcmalloc heap map: ");
    fd_out_put(o, hc_stage_name());
    fd_out_put(o, "</text>\n<text x=\"20\" y=\"48\" class=\"sub\">one strip per run of contiguous heap "
           "address space; one row = ");
    fd_out_put_u(o, row_pages);
    fd_out_put(o, " pages (");
    put_size(o, (uint64_t)row_pages << HC_PAGE_SHIFT);
    fd_out_put(o, "), a page = 8 KiB; ");
    fd_out_put_u(o, h->strips);
    fd_out_put(o, h->strips == 1 ? " strip" : " strips");
    fd_out_put(o, "; hover a shape for its spans</text>\n");

    put_text(o, 20, 76, "head", "Totals (hc_get_stats)");
    put_total(o, 20, 96, "os_mapped_bytes", "mapped from the OS", st->os_mapped_bytes);
    put_total(o, 20, 114, "bytes_in_use", "in use by the program", st->bytes_in_use);
    put_total(o, 20, 132, "thread_cache_bytes", "cached: thread caches", st->thread_cache_bytes);
    put_total(o, 20, 150, "central_cache_bytes", "cached: central cache", st->central_cache_bytes);
    put_total(o, 20, 168, "page_cache_free_bytes", "cached: page cache (backed)",
              st->page_cache_free_bytes);
    put_total(o, 20, 186, "released_bytes", "released to the OS", st->released_bytes);
    put_total(o, 20, 204, "metadata_bytes", "metadata", st->metadata_bytes);

    put_text(o, 420, 76, "head", "Spans, by state (pages drawn below)");
    for (int k = 0; k < KIND_COUNT; k++) {
        int y = 86 + 20 * k;
        if (k == KIND_SMALL) {
            /* The class ramp: every tenth class, from 8 B to 256 KiB. */
            for (unsigned c = 1, i = 0; c < HC_NUM_CLASSES; c += 10, i++) {
                fd_out_put(o, "<rect x=\"");
                fd_out_put_u(o, 420 + 6 * i);
                fd_out_put(o, "\" y=\"");
                fd_out_put_u(o, (uint64_t)y);
                fd_out_put(o, "\" width=\"6\" height=\"14\" fill=\"");
                put_class_colour(o, c);
                fd_out_put(o, "\"/>");
            }
        } else {
            put_swatch(o, 420, y, kind_colour[k]);
        }
        fd_out_put(o, "\n<text x=\"");
        fd_out_put_u(o, k == KIND_SMALL ? 484 : 442);
        fd_out_put(o, "\" y=\"");
        fd_out_put_u(o, (uint64_t)y + 12);
        fd_out_put(o, "\">");
        fd_out_put(o, kind_label[k]);
        if (k == KIND_SMALL)
            fd_out_put(o, ", 8 B (blue) .. 256 KiB (red)");
        if (k == KIND_RELEASED)
            fd_out_put(o, " (a partly released span: backed share first)");
        fd_out_put(o, "</text>\n");
    }
    fd_out_put(o, "<text x=\"420\" y=\"204\" class=\"sub\">");
    fd_out_put_u(o, h->pages[KIND_SMALL] + h->pages[KIND_LARGE] + h->pages[KIND_DIRECT] +
                 h->pages[KIND_FREE] + h->pages[KIND_RELEASED]);
    fd_out_put(o, " pages in spans (");
    put_size(o, (uint64_t)(h->pages[KIND_SMALL] + h->pages[KIND_LARGE] + h->pages[KIND_DIRECT] +
                           h->pages[KIND_FREE] + h->pages[KIND_RELEASED])
                    << HC_PAGE_SHIFT);
    fd_out_put(o, "); metadata and page map not drawn</text>\n");
}

/* The first walk counts pages by kind too (for the header line). */
static void shape_count(void *arg, const pc_span_view *s) {
    heap_shape *h = arg;
    shape_visit(h, s);
    if (s->state == SPAN_FREE) {
        size_t backed = s->backed_pages < s->page_count ? s->backed_pages : s->page_count;
        h->pages[KIND_FREE] += backed;
        h->pages[KIND_RELEASED] += s->page_count - backed;
    } else {
        h->pages[s->state == SPAN_SMALL ? KIND_SMALL : s->direct ? KIND_DIRECT : KIND_LARGE] +=
            s->page_count;
    }
}

HC_EXPORT int hc_dump_heap_svg(int fd) {
    hc_stats st;
    hc_get_stats(&st);
    heap_shape h = {0};
    pc_visit_spans(shape_count, &h);
    shape_end_strip(&h);

    int k = 0;
    while (k + 1 < ROW_CHOICES && h.rows[k] > MAX_ROWS)
        k++;
    size_t row_pages = (size_t)MIN_ROW_PAGES << k;
    uint64_t height = HEADER_HEIGHT + h.rows[k] * (ROW_HEIGHT + ROW_GAP) + h.strips * STRIP_GAP + 30;

    hc_fd_out out = {.fd = fd};
    put_header(&out, &st, &h, row_pages, height);
    fd_out_put(&out, "<g id=\"strips\" stroke=\"white\" stroke-width=\"0.3\">\n");
    /* The spans may have changed since the first walk (other threads): the
     * picture is drawn from this walk alone, on the scale chosen from that
     * one; at worst rows run past the bottom edge. */
    heap_draw d = {.out = &out, .row_pages = row_pages, .next_strip_y = HEADER_HEIGHT * 100};
    pc_visit_spans(draw_visit, &d);
    draw_end_strip(&d);
    fd_out_put(&out, "</g>\n");
    if (d.strips == 0)
        put_text(&out, STRIP_X, HEADER_HEIGHT + 12, "sub", "(no heap yet: nothing allocated)");
    fd_out_put(&out, "</svg>\n");
    return fd_out_finish(&out);
}
