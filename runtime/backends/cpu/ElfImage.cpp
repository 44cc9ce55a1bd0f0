// Checks what glibc's loader reads from a shared object before it maps it:
// the program headers, the dynamic section, the symbol and hash tables and
// the relocations. Everything is read with bounds checks and memcpy, since the
// image may be anything.
#include "runtime/backends/cpu/ElfImage.h"

#include "runtime/format/InputFile.h"

#include <cstdint>
#include <cstring>
#include <elf.h>
#include <vector>

namespace hetrt::cpu {

using format::printable;

namespace {

/// Bounds on what model code needs; far past any real one.
constexpr uint64_t kMaxProgramHeaders = 64;
constexpr uint64_t kMaxImageSpan = uint64_t(1) << 30;

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx",
                static_cast<unsigned long long>(value));
  return text;
}

class ElfChecker {
public:
  explicit ElfChecker(std::string_view image) : image_(image) {}

  bool check(std::string &why) {
    return checkHeader(why) && checkSegments(why) && checkDynamic(why) &&
           checkSymbols(why) && checkRelocations(why);
  }

private:
  /// [offset, offset + size) lies inside the file.
  bool inFile(uint64_t offset, uint64_t size) const {
    return offset <= image_.size() && size <= image_.size() - offset;
  }

  template <typename T> T read(uint64_t offset) const {
    T value;
    std::memcpy(&value, image_.data() + offset, sizeof(T));
    return value;
  }

  /// The loadable segment whose memory holds [address, address + size), or
  /// null. `fileBacked` also asks that those bytes come from the file.
  const Elf64_Phdr *segmentHolding(uint64_t address, uint64_t size,
                                   bool fileBacked) const {
    for (const Elf64_Phdr &segment : loads_) {
      uint64_t extent = fileBacked ? segment.p_filesz : segment.p_memsz;
      if (address >= segment.p_vaddr && address - segment.p_vaddr <= extent &&
          size <= extent - (address - segment.p_vaddr))
        return &segment;
    }
    return nullptr;
  }

  /// The file offset of address `address` holding `size` bytes from the
  /// file, or false when no segment maps them from the file.
  bool fileOffsetOf(uint64_t address, uint64_t size, uint64_t &offset) const {
    const Elf64_Phdr *segment = segmentHolding(address, size, true);
    if (!segment)
      return false;
    offset = segment->p_offset + (address - segment->p_vaddr);
    return true;
  }

  bool checkHeader(std::string &why) {
    if (image_.size() < sizeof(Elf64_Ehdr) ||
        std::memcmp(image_.data(), ELFMAG, SELFMAG) != 0) {
      why = "is not an ELF file (its first bytes are not the ELF magic)";
      return false;
    }
    header_ = read<Elf64_Ehdr>(0);
    if (header_.e_ident[EI_CLASS] != ELFCLASS64 ||
        header_.e_ident[EI_DATA] != ELFDATA2LSB ||
        header_.e_machine != EM_X86_64) {
      why = "is not 64-bit little-endian x86-64 code";
      return false;
    }
    if (header_.e_type != ET_DYN) {
      why = "is not a shared object (ELF type " +
            std::to_string(header_.e_type) + ")";
      return false;
    }
    if (header_.e_phentsize != sizeof(Elf64_Phdr) || header_.e_phnum == 0 ||
        header_.e_phnum > kMaxProgramHeaders ||
        !inFile(header_.e_phoff,
                uint64_t(header_.e_phnum) * sizeof(Elf64_Phdr))) {
      why = "has a program header table outside the file (offset " +
            hex(header_.e_phoff) + ", " + std::to_string(header_.e_phnum) +
            " entries) or of the wrong entry size";
      return false;
    }
    return true;
  }

  bool checkSegments(std::string &why) {
    uint64_t end = 0;
    for (unsigned i = 0; i < header_.e_phnum; ++i) {
      Elf64_Phdr segment =
          read<Elf64_Phdr>(header_.e_phoff + i * sizeof(Elf64_Phdr));
      std::string name = "segment " + std::to_string(i);
      switch (segment.p_type) {
      case PT_LOAD:
        if (!inFile(segment.p_offset, segment.p_filesz)) {
          why = "is cut short: " + name + " needs file bytes " +
                hex(segment.p_offset) + " to " +
                hex(segment.p_offset + segment.p_filesz) + " of " +
                hex(image_.size());
          return false;
        }
        if (segment.p_filesz > segment.p_memsz ||
            segment.p_memsz > kMaxImageSpan ||
            segment.p_vaddr > kMaxImageSpan - segment.p_memsz ||
            segment.p_vaddr < end) {
          why = "has a loadable " + name +
                " that overlaps another, is out of order or is larger than "
                "its memory";
          return false;
        }
        if (segment.p_align > 1 &&
            ((segment.p_align & (segment.p_align - 1)) != 0 ||
             segment.p_vaddr % segment.p_align !=
                 segment.p_offset % segment.p_align)) {
          why = "has a loadable " + name + " that is not aligned";
          return false;
        }
        if ((segment.p_flags & PF_W) && (segment.p_flags & PF_X)) {
          why = "has a loadable " + name + " both writable and executable";
          return false;
        }
        end = segment.p_vaddr + segment.p_memsz;
        loads_.push_back(segment);
        break;
      case PT_DYNAMIC:
        if (!inFile(segment.p_offset, segment.p_filesz)) {
          why = "is cut short: " + name + " lies past the end of the file";
          return false;
        }
        if (sawDynamic_) {
          why = "has two dynamic segments";
          return false;
        }
        sawDynamic_ = true;
        dynamic_ = segment;
        break;
      case PT_PHDR:
      case PT_GNU_RELRO:
      case PT_GNU_EH_FRAME:
      case PT_NOTE:
      case PT_GNU_PROPERTY:
        if (!inFile(segment.p_offset, segment.p_filesz)) {
          why = "is cut short: " + name + " lies past the end of the file";
          return false;
        }
        described_.push_back(segment);
        break;
      case PT_GNU_STACK:
        if (segment.p_flags & PF_X) {
          why = "asks for an executable stack";
          return false;
        }
        break;
      default:
        why = "has a " + name + " of type " + hex(segment.p_type) +
              " that model code never carries (thread-local storage, an "
              "interpreter, ...)";
        return false;
      }
    }
    if (loads_.empty() || !sawDynamic_) {
      why = "has no loadable or no dynamic segment";
      return false;
    }
    // The loader reads these from the mapped image.
    for (const Elf64_Phdr &segment : described_)
      if (!segmentHolding(segment.p_vaddr, segment.p_memsz,
                          segment.p_type != PT_GNU_RELRO)) {
        why = "describes memory (segment type " + hex(segment.p_type) +
              " at " + hex(segment.p_vaddr) + ") that no loadable segment "
              "holds";
        return false;
      }
    return true;
  }

  bool checkDynamic(std::string &why) {
    uint64_t offset = 0;
    if (dynamic_.p_memsz % sizeof(Elf64_Dyn) != 0 ||
        !fileOffsetOf(dynamic_.p_vaddr, dynamic_.p_memsz, offset)) {
      why = "has a dynamic section outside its loadable segments";
      return false;
    }
    bool terminated = false;
    uint64_t pltRelocationKind = DT_RELA;
    for (uint64_t at = 0; at < dynamic_.p_memsz; at += sizeof(Elf64_Dyn)) {
      Elf64_Dyn entry = read<Elf64_Dyn>(offset + at);
      uint64_t value = entry.d_un.d_val;
      switch (entry.d_tag) {
      case DT_NULL:
        terminated = true;
        break;
      case DT_STRTAB: strtab_ = value; break;
      case DT_STRSZ: strsz_ = value; break;
      case DT_SYMTAB: symtab_ = value; break;
      case DT_SYMENT: syment_ = value; break;
      case DT_HASH: hash_ = value; break;
      case DT_GNU_HASH: gnuHash_ = value; break;
      case DT_RELA: rela_ = value; break;
      case DT_RELASZ: relasz_ = value; break;
      case DT_RELAENT: relaent_ = value; break;
      case DT_JMPREL: jmprel_ = value; break;
      case DT_PLTRELSZ: pltrelsz_ = value; break;
      case DT_PLTREL: pltRelocationKind = value; break;
      case DT_PLTGOT:
      case DT_RELACOUNT:
      case DT_FLAGS:
      case DT_FLAGS_1:
      case DT_BIND_NOW:
      case DT_SONAME:
      case DT_DEBUG:
        break;
      case DT_NEEDED:
        why = "asks to load other libraries (DT_NEEDED); model code uses "
              "only what the runtime's process has";
        return false;
      case DT_INIT:
      case DT_FINI:
      case DT_INIT_ARRAY:
      case DT_FINI_ARRAY:
      case DT_PREINIT_ARRAY:
        why = "carries initializers or finalizers, which model code never "
              "has and which would run on load";
        return false;
      default:
        why = "has a dynamic entry of tag " + hex(entry.d_tag) +
              " that model code never carries";
        return false;
      }
      if (terminated)
        break;
    }
    if (!terminated) {
      why = "has a dynamic section without its terminating entry";
      return false;
    }
    if (!strtab_ || !symtab_ || !hash_ || syment_ != sizeof(Elf64_Sym) ||
        pltRelocationKind != DT_RELA ||
        (rela_ && relaent_ != sizeof(Elf64_Rela))) {
      why = "lacks a string, symbol or hash table, or has tables of the "
            "wrong entry size";
      return false;
    }
    return true;
  }

  bool checkSymbols(std::string &why) {
    uint64_t strtabOffset = 0;
    if (strsz_ == 0 || !fileOffsetOf(strtab_, strsz_, strtabOffset) ||
        image_[strtabOffset + strsz_ - 1] != '\0') {
      why = "has a string table outside the image or not ending in NUL";
      return false;
    }
    // The SysV hash table gives the symbol count; its chains must stay in it.
    uint64_t hashOffset = 0;
    if (!fileOffsetOf(hash_, 8, hashOffset)) {
      why = "has a hash table outside the image";
      return false;
    }
    uint64_t buckets = read<uint32_t>(hashOffset);
    symbolCount_ = read<uint32_t>(hashOffset + 4);
    if (buckets == 0) {
      why = "has a hash table without buckets";
      return false;
    }
    if (!fileOffsetOf(hash_, 8 + 4 * (buckets + symbolCount_), hashOffset)) {
      why = "has a hash table larger than the image";
      return false;
    }
    for (uint64_t i = 0; i < buckets + symbolCount_; ++i)
      if (read<uint32_t>(hashOffset + 8 + 4 * i) >= symbolCount_) {
        why = "has a hash table pointing past its symbols";
        return false;
      }
    if (gnuHash_ && !checkGnuHash(why))
      return false;
    uint64_t symtabOffset = 0;
    if (!fileOffsetOf(symtab_, symbolCount_ * sizeof(Elf64_Sym),
                      symtabOffset)) {
      why = "has a symbol table outside the image";
      return false;
    }
    for (uint64_t i = 0; i < symbolCount_; ++i) {
      Elf64_Sym symbol =
          read<Elf64_Sym>(symtabOffset + i * sizeof(Elf64_Sym));
      if (symbol.st_name >= strsz_) {
        why = "has symbol " + std::to_string(i) + " named past the strings";
        return false;
      }
      std::string symbolName =
          printable(image_.data() + strtabOffset + symbol.st_name);
      unsigned type = ELF64_ST_TYPE(symbol.st_info);
      // An indirect function's address is a resolver the loader and dlsym
      // call; thread-local symbols need storage model code never has.
      if (type == STT_GNU_IFUNC || type == STT_TLS) {
        why = "has symbol \"" + symbolName +
              "\" of a kind model code never has (an indirect function or "
              "thread-local data)";
        return false;
      }
      if (symbol.st_shndx == SHN_UNDEF)
        continue;
      // dlsym hands out these addresses; the runtime calls functions and
      // reads data through them.
      const Elf64_Phdr *holder =
          segmentHolding(symbol.st_value, symbol.st_size, false);
      bool executable = holder && (holder->p_flags & PF_X);
      if (!holder || (type == STT_FUNC) != executable) {
        why = "defines symbol \"" + symbolName + "\" " +
              (!holder ? "outside its loadable segments"
                       : type == STT_FUNC ? "as a function outside its code"
                                          : "as data inside its code");
        return false;
      }
    }
    return true;
  }

  bool checkGnuHash(std::string &why) {
    uint64_t offset = 0;
    if (!fileOffsetOf(gnuHash_, 16, offset)) {
      why = "has a GNU hash table outside the image";
      return false;
    }
    uint64_t buckets = read<uint32_t>(offset);
    uint64_t firstSymbol = read<uint32_t>(offset + 4);
    uint64_t bloomWords = read<uint32_t>(offset + 8);
    if (firstSymbol > symbolCount_ || bloomWords == 0 ||
        (bloomWords & (bloomWords - 1)) != 0) {
      why = "has a malformed GNU hash table";
      return false;
    }
    uint64_t chains = symbolCount_ - firstSymbol;
    uint64_t size = 16 + 8 * bloomWords + 4 * buckets + 4 * chains;
    if (buckets > kMaxImageSpan || !fileOffsetOf(gnuHash_, size, offset)) {
      why = "has a GNU hash table larger than the image";
      return false;
    }
    uint64_t bucketsAt = offset + 16 + 8 * bloomWords;
    for (uint64_t i = 0; i < buckets; ++i) {
      uint32_t start = read<uint32_t>(bucketsAt + 4 * i);
      if (start != 0 && (start < firstSymbol || start >= symbolCount_)) {
        why = "has a GNU hash bucket pointing past its symbols";
        return false;
      }
    }
    // A chain walk stops at an entry with its low bit set; the last one must
    // have it, or a lookup would read past the table.
    if (chains > 0 &&
        (read<uint32_t>(bucketsAt + 4 * buckets + 4 * (chains - 1)) & 1) == 0) {
      why = "has a GNU hash chain that does not end";
      return false;
    }
    return true;
  }

  bool checkRelocationTable(uint64_t address, uint64_t size,
                            std::string &why) {
    uint64_t offset = 0;
    if (size % sizeof(Elf64_Rela) != 0 ||
        (size && !fileOffsetOf(address, size, offset))) {
      why = "has a relocation table outside the image";
      return false;
    }
    for (uint64_t at = 0; at < size; at += sizeof(Elf64_Rela)) {
      Elf64_Rela relocation = read<Elf64_Rela>(offset + at);
      uint64_t type = ELF64_R_TYPE(relocation.r_info);
      uint64_t symbol = ELF64_R_SYM(relocation.r_info);
      bool known = type == R_X86_64_RELATIVE || type == R_X86_64_64 ||
                   type == R_X86_64_GLOB_DAT || type == R_X86_64_JUMP_SLOT;
      const Elf64_Phdr *target =
          segmentHolding(relocation.r_offset, 8, false);
      // What a relocation stores must point into the image (RELATIVE) or at
      // its symbol (and at most into its span): never a wild address.
      int64_t addend = relocation.r_addend;
      bool addendInImage =
          type == R_X86_64_RELATIVE
              ? symbol == 0 && addend >= 0 &&
                    segmentHolding(static_cast<uint64_t>(addend), 0, false)
              : symbol != 0 && addend >= 0 &&
                    static_cast<uint64_t>(addend) < imageSpan();
      if (!known || symbol >= symbolCount_ || !target ||
          !(target->p_flags & PF_W) || !addendInImage) {
        why = "has a relocation (type " + std::to_string(type) + " at " +
              hex(relocation.r_offset) +
              ") of a kind model code never has, or that would write "
              "outside its writable segments or store a wild address";
        return false;
      }
    }
    return true;
  }

  bool checkRelocations(std::string &why) {
    return checkRelocationTable(rela_, rela_ ? relasz_ : 0, why) &&
           checkRelocationTable(jmprel_, jmprel_ ? pltrelsz_ : 0, why);
  }

  /// Bytes from the image's first address to its last.
  uint64_t imageSpan() const {
    return loads_.back().p_vaddr + loads_.back().p_memsz;
  }

  std::string_view image_;
  Elf64_Ehdr header_{};
  std::vector<Elf64_Phdr> loads_, described_;
  Elf64_Phdr dynamic_{};
  bool sawDynamic_ = false;
  uint64_t strtab_ = 0, strsz_ = 0, symtab_ = 0, syment_ = 0, hash_ = 0,
           gnuHash_ = 0, rela_ = 0, relasz_ = 0, relaent_ = 0, jmprel_ = 0,
           pltrelsz_ = 0, symbolCount_ = 0;
};

} // namespace

bool checkElfImage(std::string_view image, std::string &why) {
  return ElfChecker(image).check(why);
}

} // namespace hetrt::cpu
