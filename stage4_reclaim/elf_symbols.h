/* stage4_reclaim/elf_symbols.h — layer 4, the leak check's reports: a code
 * address to the name of the function holding it, read from the symbol
 * table of the object's own file (.symtab, which the loader never maps and
 * dladdr never sees: a program's static functions, and all of an
 * executable's functions unless it was linked -rdynamic), else from its
 * dynamic symbols.
 *
 * Nothing here allocates: each file is mapped read-only with mmap and kept
 * mapped (the leak check runs once, at exit); at most ELF_SYMBOLS_MAX_FILES
 * files, the rest go unnamed. Not thread-safe: the leak check calls it with
 * the profiler's lock held. */
#ifndef HC_ELF_SYMBOLS_H_
#define HC_ELF_SYMBOLS_H_

#include <stddef.h>
#include <stdint.h>

#define ELF_SYMBOLS_MAX_FILES 32

typedef struct elf_symbol {
    const char *name;   /* the symbol's name, as the file spells it (C++ mangled) */
    uintptr_t offset;   /* pc - the symbol's address */
    const char *file;   /* the object's path, as the loader knows it ("" for the program: see below) */
    uintptr_t file_offset; /* pc - the object's load bias: the address pprof and addr2line take */
} elf_symbol;

/* 1 and *out if `pc` lies in a loaded object; out->name is NULL where no
 * symbol covers it. The program itself is read through /proc/self/exe. */
int elf_symbol_of(uintptr_t pc, elf_symbol *out);

#endif /* HC_ELF_SYMBOLS_H_ */
