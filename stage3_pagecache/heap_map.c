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
 * written with write(2): no stdio, no malloc, so the allocator can draw
 * itself while it is the process's malloc.
 * May touch: pc_visit_spans (under the page cache lock), hc_get_stats,
 * write(2). Never the allocator's state. */
#include "stage3_pagecache/heap_map.h"

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "common/compiler.h"
#include "common/hcmalloc.h"
#include "common/size_class.h"
#include "stage3_pagecache/page_cache.h"

/* ---- Output: a fixed buffer, flushed with write(2) ------------------------------ */

typedef struct svg_out {
    int fd;
    int failed; /* errno of the first failed write; nothing is written after it */
    size_t len;
    char buf[4096];
} svg_out;

static void out_flush(svg_out *o) {
    for (size_t done = 0; done < o->len && !o->failed;) {
        ssize_t n = write(o->fd, o->buf + done, o->len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            o->failed = n < 0 ? errno : EIO;
        else
            done += (size_t)n;
    }
    o->len = 0;
}

static void put(svg_out *o, const char *s) {
    for (; *s; s++) {
        if (o->len == sizeof o->buf)
            out_flush(o);
        o->buf[o->len++] = *s;
    }
}

static void put_u(svg_out *o, uint64_t v) {
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    char text[24];
    for (int i = 0; i < n; i++) text[i] = digits[n - 1 - i];
    text[n] = '\0';
    put(o, text);
}

/* `hundredths` / 100 with two decimals: SVG coordinates. */
static void put_centi(svg_out *o, uint64_t hundredths) {
    put_u(o, hundredths / 100);
    char frac[4] = {'.', (char)('0' + hundredths / 10 % 10), (char)('0' + hundredths % 10), '\0'};
    put(o, frac);
}

/* Bytes as "12.3 MiB" (or KiB below 1 MiB), rounded to a tenth. */
static void put_size(svg_out *o, uint64_t bytes) {
    int mib = bytes >= ((uint64_t)1 << 20);
    uint64_t tenths = mib ? (bytes * 10 + (1 << 19)) >> 20 : (bytes * 10 + (1 << 9)) >> 10;
    put_u(o, tenths / 10);
    char frac[3] = {'.', (char)('0' + tenths % 10), '\0'};
    put(o, frac);
    put(o, mib ? " MiB" : " KiB");
}

static void put_hex(svg_out *o, uint64_t v) {
    char text[20] = "0x";
    int n = 2;
    for (int shift = 60; shift >= 0; shift -= 4) {
        unsigned d = (unsigned)(v >> shift) & 15;
        if (n > 2 || d != 0 || shift == 0)
            text[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
    }
    text[n] = '\0';
    put(o, text);
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
static void put_class_colour(svg_out *o, unsigned cls) {
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
    put(o, text);
}

/* ---- Layout ----------------------------------------------------------------------- */

#define MAP_STR_(x) #x
#define MAP_STR(x) MAP_STR_(x)

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
    svg_out *out;
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
    svg_out *o = d->out;
    size_t offset = start - d->strip_start;
    while (pages > 0) {
        size_t row = offset / d->row_pages, col = offset % d->row_pages;
        size_t piece = d->row_pages - col < pages ? d->row_pages - col : pages;
        uint64_t x0 = (uint64_t)col * STRIP_WIDTH * 100 / d->row_pages;
        uint64_t x1 = (uint64_t)(col + piece) * STRIP_WIDTH * 100 / d->row_pages;
        put(o, "<rect x=\"");
        put_centi(o, STRIP_X * 100 + x0);
        put(o, "\" y=\"");
        put_centi(o, d->strip_y + row * (ROW_HEIGHT + ROW_GAP) * 100);
        put(o, "\" width=\"");
        put_centi(o, x1 - x0 > 0 ? x1 - x0 : 1);
        put(o, "\" height=\"" MAP_STR(ROW_HEIGHT) "\"/>");
        offset += piece;
        pages -= piece;
    }
}

/* One group per run: its kind, pages and spans as data attributes (the test
 * adds them up), a tooltip, then its shapes. */
static void draw_group(heap_draw *d, run_kind kind, uintptr_t start, size_t pages) {
    svg_out *o = d->out;
    put(o, "<g data-kind=\"");
    put(o, kind_name[kind]);
    put(o, "\" data-pages=\"");
    put_u(o, pages);
    put(o, "\" fill=\"");
    if (kind == KIND_SMALL)
        put_class_colour(o, d->size_class);
    else
        put(o, kind_colour[kind]);
    put(o, "\"><title>");
    put_hex(o, (uint64_t)start << HC_PAGE_SHIFT);
    put(o, ": ");
    put_u(o, d->run_spans);
    put(o, d->run_spans == 1 ? " span, " : " spans, ");
    put_u(o, pages);
    put(o, pages == 1 ? " page (" : " pages (");
    put_size(o, (uint64_t)pages << HC_PAGE_SHIFT);
    put(o, "), ");
    put(o, kind_label[kind]);
    if (kind == KIND_SMALL) {
        put(o, ": class ");
        put_u(o, d->size_class);
        put(o, ", ");
        put_u(o, sc_size(d->size_class));
        put(o, " B objects");
    }
    put(o, "</title>");
    draw_pages(d, start, pages);
    put(o, "</g>\n");
}

static void draw_run(heap_draw *d) {
    if (d->run_pages > 0)
        draw_group(d, d->kind, d->run_start, d->run_pages);
    d->run_pages = 0;
    d->run_spans = 0;
}

static void draw_strip_label(heap_draw *d) {
    svg_out *o = d->out;
    size_t pages = d->strip_end - d->strip_start;
    put(o, "<text class=\"label\" x=\"");
    put_u(o, STRIP_X - 8);
    put(o, "\" y=\"");
    put_centi(o, d->strip_y + 1100);
    put(o, "\" text-anchor=\"end\">");
    put_hex(o, (uint64_t)d->strip_start << HC_PAGE_SHIFT);
    put(o, "</text><text class=\"label\" x=\"");
    put_u(o, STRIP_X - 8);
    put(o, "\" y=\"");
    put_centi(o, d->strip_y + 1100 + (ROW_HEIGHT + ROW_GAP) * 100);
    put(o, "\" text-anchor=\"end\">");
    put_size(o, (uint64_t)pages << HC_PAGE_SHIFT);
    put(o, "</text>\n");
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

static void put_text(svg_out *o, int x, int y, const char *cls, const char *text) {
    put(o, "<text x=\"");
    put_u(o, (uint64_t)x);
    put(o, "\" y=\"");
    put_u(o, (uint64_t)y);
    put(o, "\" class=\"");
    put(o, cls);
    put(o, "\">");
    put(o, text);
    put(o, "</text>\n");
}

/* One line of totals: the test reads data-total and data-bytes. */
static void put_total(svg_out *o, int x, int y, const char *name, const char *label, size_t bytes) {
    put(o, "<text x=\"");
    put_u(o, (uint64_t)x);
    put(o, "\" y=\"");
    put_u(o, (uint64_t)y);
    put(o, "\" data-total=\"");
    put(o, name);
    put(o, "\" data-bytes=\"");
    put_u(o, bytes);
    put(o, "\">");
    put(o, label);
    put(o, ": <tspan class=\"num\">");
    put_size(o, bytes);
    put(o, "</tspan></text>\n");
}

static void put_swatch(svg_out *o, int x, int y, const char *colour) {
    put(o, "<rect x=\"");
    put_u(o, (uint64_t)x);
    put(o, "\" y=\"");
    put_u(o, (uint64_t)y);
    put(o, "\" width=\"14\" height=\"14\" fill=\"");
    put(o, colour);
    put(o, "\" stroke=\"#666\" stroke-width=\"0.5\"/>");
}

static void put_header(svg_out *o, const hc_stats *st, const heap_shape *h, size_t row_pages,
                       uint64_t height) {
    put(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
           "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" MAP_STR(MAP_WIDTH) "\" height=\"");
    put_u(o, height);
    put(o, "\" viewBox=\"0 0 " MAP_STR(MAP_WIDTH) " ");
    put_u(o, height);
    put(o, "\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"12\">\n"
           "<style>.title{font-size:18px;font-weight:bold}.sub{fill:#555}"
           ".head{font-weight:bold}.label{fill:#444;font-size:11px}.num{font-weight:bold}</style>\n"
           "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    put(o, "<text x=\"20\" y=\"28\" class=\"title\">hcmalloc heap map: ");
    put(o, hc_stage_name());
    put(o, "</text>\n<text x=\"20\" y=\"48\" class=\"sub\">one strip per run of contiguous heap "
           "address space; one row = ");
    put_u(o, row_pages);
    put(o, " pages (");
    put_size(o, (uint64_t)row_pages << HC_PAGE_SHIFT);
    put(o, "), a page = 8 KiB; ");
    put_u(o, h->strips);
    put(o, h->strips == 1 ? " strip" : " strips");
    put(o, "; hover a shape for its spans</text>\n");

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
                put(o, "<rect x=\"");
                put_u(o, 420 + 6 * i);
                put(o, "\" y=\"");
                put_u(o, (uint64_t)y);
                put(o, "\" width=\"6\" height=\"14\" fill=\"");
                put_class_colour(o, c);
                put(o, "\"/>");
            }
        } else {
            put_swatch(o, 420, y, kind_colour[k]);
        }
        put(o, "\n<text x=\"");
        put_u(o, k == KIND_SMALL ? 484 : 442);
        put(o, "\" y=\"");
        put_u(o, (uint64_t)y + 12);
        put(o, "\">");
        put(o, kind_label[k]);
        if (k == KIND_SMALL)
            put(o, ", 8 B (blue) .. 256 KiB (red)");
        if (k == KIND_RELEASED)
            put(o, " (a partly released span: backed share first)");
        put(o, "</text>\n");
    }
    put(o, "<text x=\"420\" y=\"204\" class=\"sub\">");
    put_u(o, h->pages[KIND_SMALL] + h->pages[KIND_LARGE] + h->pages[KIND_DIRECT] +
                 h->pages[KIND_FREE] + h->pages[KIND_RELEASED]);
    put(o, " pages in spans (");
    put_size(o, (uint64_t)(h->pages[KIND_SMALL] + h->pages[KIND_LARGE] + h->pages[KIND_DIRECT] +
                           h->pages[KIND_FREE] + h->pages[KIND_RELEASED])
                    << HC_PAGE_SHIFT);
    put(o, "); metadata and page map not drawn</text>\n");
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

    svg_out out = {.fd = fd};
    put_header(&out, &st, &h, row_pages, height);
    put(&out, "<g id=\"strips\" stroke=\"white\" stroke-width=\"0.3\">\n");
    /* The spans may have changed since the first walk (other threads): the
     * picture is drawn from this walk alone, on the scale chosen from that
     * one; at worst rows run past the bottom edge. */
    heap_draw d = {.out = &out, .row_pages = row_pages, .next_strip_y = HEADER_HEIGHT * 100};
    pc_visit_spans(draw_visit, &d);
    draw_end_strip(&d);
    put(&out, "</g>\n");
    if (d.strips == 0)
        put_text(&out, STRIP_X, HEADER_HEIGHT + 12, "sub", "(no heap yet: nothing allocated)");
    put(&out, "</svg>\n");
    out_flush(&out);
    if (out.failed) {
        errno = out.failed;
        return -1;
    }
    return 0;
}
