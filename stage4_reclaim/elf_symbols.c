/* stage4_reclaim/elf_symbols.c — layer 4, the leak check's reports: names
 * for code addresses from the objects' own ELF files (elf_symbols.h).
 *
 * The loader tells which object holds an address and where it was loaded
 * (dladdr1, its link map); the file's section headers lead to .symtab and
 * its string table, or to .dynsym when the file was stripped. A function
 * symbol covers [value, value + size) in the file's addresses, which are
 * the run-time address less the load bias. Every read of the file is
 * checked against its size: a truncated or foreign file names nothing,
 * it never faults.
 * May touch: dladdr1, open/fstat/mmap of the objects' files. */
#define _GNU_SOURCE
#include "stage4_reclaim/elf_symbols.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct elf_file {
    const struct link_map *map; /* the loader's record of the object */
    const unsigned char *image; /* the file, mapped; NULL: unreadable or no symbols */
    size_t image_size;
    const ElfW(Sym) *symbols;
    size_t symbol_count;
    const char *names;
    size_t names_size;
} elf_file;

static elf_file files[ELF_SYMBOLS_MAX_FILES];
static int file_count;

/* Does [offset, offset + size) lie inside the image? */
static int in_image(const elf_file *f, uint64_t offset, uint64_t size) {
    return offset <= f->image_size && size <= f->image_size - offset;
}

/* Finds the symbol table (static first, else dynamic) and its strings. */
static void find_symbols(elf_file *f) {
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)f->image;
    if (!in_image(f, 0, sizeof *eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(ElfW(Shdr)) ||
        !in_image(f, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(ElfW(Shdr))))
        return;
    const ElfW(Shdr) *sections = (const ElfW(Shdr) *)(f->image + eh->e_shoff);
    for (unsigned wanted = SHT_SYMTAB;; wanted = SHT_DYNSYM) {
        for (unsigned i = 0; i < eh->e_shnum; i++) {
            const ElfW(Shdr) *s = &sections[i];
            if (s->sh_type != wanted || s->sh_entsize != sizeof(ElfW(Sym)) || s->sh_link >= eh->e_shnum)
                continue;
            const ElfW(Shdr) *strings = &sections[s->sh_link];
            if (!in_image(f, s->sh_offset, s->sh_size) || !in_image(f, strings->sh_offset, strings->sh_size))
                continue;
            f->symbols = (const ElfW(Sym) *)(f->image + s->sh_offset);
            f->symbol_count = s->sh_size / sizeof(ElfW(Sym));
            f->names = (const char *)(f->image + strings->sh_offset);
            f->names_size = strings->sh_size;
            return;
        }
        if (wanted == SHT_DYNSYM)
            return;
    }
}

/* The object's file, mapped on first use. */
static elf_file *file_of(const struct link_map *map) {
    for (int i = 0; i < file_count; i++)
        if (files[i].map == map)
            return &files[i];
    if (file_count == ELF_SYMBOLS_MAX_FILES)
        return NULL;
    elf_file *f = &files[file_count++];
    memset(f, 0, sizeof *f);
    f->map = map;
    const char *path = map->l_name != NULL && map->l_name[0] != '\0' ? map->l_name : "/proc/self/exe";
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return f;
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        void *image = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (image != MAP_FAILED) {
            f->image = image;
            f->image_size = (size_t)st.st_size;
            find_symbols(f);
        }
    }
    close(fd);
    return f;
}

int elf_symbol_of(uintptr_t pc, elf_symbol *out) {
    Dl_info info;
    struct link_map *map = NULL;
    memset(out, 0, sizeof *out);
    /* pc - 1: a return address may be the first byte after its call's function. */
    if (dladdr1((void *)(pc - 1), &info, (void **)&map, RTLD_DL_LINKMAP) == 0 || map == NULL)
        return 0;
    out->file = map->l_name != NULL ? map->l_name : "";
    out->file_offset = pc - map->l_addr;
    uintptr_t at = pc - 1 - map->l_addr;
    elf_file *f = file_of(map);
    if (f != NULL && f->symbols != NULL) {
        for (size_t i = 0; i < f->symbol_count; i++) {
            const ElfW(Sym) *s = &f->symbols[i];
            if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF ||
                at < s->st_value || at - s->st_value >= s->st_size || s->st_name >= f->names_size)
                continue;
            /* A name runs to its NUL, which must lie inside the table. */
            if (memchr(f->names + s->st_name, '\0', f->names_size - s->st_name) == NULL)
                continue;
            out->name = f->names + s->st_name;
            out->offset = pc - (map->l_addr + s->st_value);
            return 1;
        }
    }
    if (info.dli_sname != NULL) { /* the loader's own answer: exported names only */
        out->name = info.dli_sname;
        out->offset = pc - (uintptr_t)info.dli_saddr;
    }
    return 1;
}
