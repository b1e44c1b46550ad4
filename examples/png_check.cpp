// SPDX-License-Identifier: MIT
// png_check: checks the examples' PNG writer (support/.../png_writer.h) with
// a decoder of its own, written from the PNG and zlib specifications and
// sharing no code with the writer (bitwise CRC-32 instead of the writer's
// table, its own Adler-32 loop).
//
//   png_check                 self-test: a 2 x 1 image against bytes made by
//                             hand (below), and a 300 x 80 image (two stored
//                             blocks) encoded, decoded and compared pixel by pixel
//   png_check FILE [W H]      decodes FILE: signature, every chunk's CRC,
//                             IHDR, the zlib header, the stored blocks and
//                             the Adler-32; with W H, also the size
//
// Prints PASS or FAIL; returns nonzero on FAIL. Only what the writer produces
// is decoded (8-bit RGB, stored deflate blocks, filter 0): anything else is a
// FAIL, as it would be a writer bug.

#include "hashgrid_support/args.h"
#include "hashgrid_support/png_writer.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

/// The 2 x 1 RGB image {(255, 0, 0), (0, 128, 255)} as a PNG with one stored
/// block: signature; IHDR (13 bytes: width 2, height 1, depth 8, colour 2,
/// methods 0) and its CRC; IDAT (18 bytes: zlib header 78 01, block header 01,
/// LEN 7, NLEN ~7, the 7 raw bytes "filter 0, RGB, RGB", Adler-32 0x08_00_02_7f)
/// and its CRC; IEND and its fixed CRC ae 42 60 82. The CRCs and the Adler-32
/// were computed independently (Python's zlib.crc32 and zlib.adler32; the zlib
/// stream round-trips through zlib.decompress).
constexpr uint8_t kTinyPng[75] = {
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a,                         // signature
    0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,                         // IHDR, 13 bytes
    0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00,       // 2 x 1, depth 8, RGB
    0x00, 0x00, 0x7b, 0x40, 0xe8, 0xdd,                                     // methods 0, CRC
    0x00, 0x00, 0x00, 0x12, 0x49, 0x44, 0x41, 0x54,                         // IDAT, 18 bytes
    0x78, 0x01, 0x01, 0x07, 0x00, 0xf8, 0xff,                               // zlib header, last stored block of 7
    0x00, 0xff, 0x00, 0x00, 0x00, 0x80, 0xff,                               // filter 0, two pixels
    0x08, 0x00, 0x02, 0x7f, 0xd5, 0x70, 0x6e, 0xaa,                         // Adler-32, CRC
    0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82, // IEND
};

/// CRC-32 bit by bit (PNG spec, annex D, without its table).
uint32_t bitwise_crc32(const uint8_t* data, size_t size) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < size; ++i) {
        c ^= data[i];
        for (int k = 0; k < 8; ++k)
            c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
    }
    return ~c;
}

uint32_t read_u32_be(const uint8_t* p) {
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

struct Decoded {
    uint32_t width = 0;
    uint32_t height = 0;
    uint32_t chunks = 0;
    uint32_t blocks = 0;
    std::vector<uint8_t> rgb;
};

/// Decodes what png_writer.h writes; "" on success, else what is wrong.
std::string decode(const std::vector<uint8_t>& file, Decoded& out) {
    static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a};
    if (file.size() < 8 || std::memcmp(file.data(), signature, 8) != 0) return "bad signature";
    std::vector<uint8_t> zlib;
    bool ihdr = false;
    bool iend = false;
    size_t at = 8;
    while (at < file.size() && !iend) {
        if (file.size() - at < 12) return "truncated chunk";
        const uint32_t length = read_u32_be(&file[at]);
        if (length > file.size() - at - 12) return "chunk longer than the file";
        const uint8_t* type = &file[at + 4];
        const uint8_t* data = type + 4;
        const uint32_t stored_crc = read_u32_be(data + length);
        if (bitwise_crc32(type, length + size_t{4}) != stored_crc) return "CRC mismatch in a chunk";
        ++out.chunks;
        if (std::memcmp(type, "IHDR", 4) == 0) {
            if (ihdr || length != 13) return "bad IHDR";
            out.width = read_u32_be(data);
            out.height = read_u32_be(data + 4);
            if (out.width == 0 || out.height == 0 || data[8] != 8 || data[9] != 2 || data[10] != 0 || data[11] != 0 ||
                data[12] != 0)
                return "IHDR is not 8-bit RGB, deflate, filter 0, no interlace";
            ihdr = true;
        } else if (std::memcmp(type, "IDAT", 4) == 0) {
            if (!ihdr) return "IDAT before IHDR";
            zlib.insert(zlib.end(), data, data + length);
        } else if (std::memcmp(type, "IEND", 4) == 0) {
            if (length != 0) return "IEND with data";
            iend = true;
        } else {
            return "unexpected chunk type";
        }
        at += 12 + size_t{length};
    }
    if (!ihdr || !iend || at != file.size()) return "missing IHDR or IEND, or bytes after IEND";

    // zlib: CMF/FLG, stored blocks only, Adler-32.
    if (zlib.size() < 6 || zlib[0] != 0x78 || (zlib[0] * 256u + zlib[1]) % 31u != 0 || (zlib[1] & 0x20u) != 0)
        return "bad zlib header";
    std::vector<uint8_t> raw;
    size_t z = 2;
    bool last = false;
    while (!last) {
        if (zlib.size() - z < 5) return "truncated deflate block";
        if ((zlib[z] & 0x06u) != 0) return "not a stored block";
        last = (zlib[z] & 0x01u) != 0;
        const uint32_t len = zlib[z + 1] | (uint32_t{zlib[z + 2]} << 8);
        const uint32_t nlen = zlib[z + 3] | (uint32_t{zlib[z + 4]} << 8);
        if ((len ^ 0xffffu) != nlen) return "LEN and NLEN disagree";
        z += 5;
        if (zlib.size() - z < len) return "truncated stored data";
        raw.insert(raw.end(), zlib.begin() + static_cast<std::ptrdiff_t>(z),
                   zlib.begin() + static_cast<std::ptrdiff_t>(z + len));
        z += len;
        ++out.blocks;
    }
    if (zlib.size() - z != 4) return "missing Adler-32 or trailing bytes";
    uint32_t s1 = 1, s2 = 0;
    for (const uint8_t byte : raw) {
        s1 = (s1 + byte) % 65521u;
        s2 = (s2 + s1) % 65521u;
    }
    if (read_u32_be(&zlib[z]) != ((s2 << 16) | s1)) return "Adler-32 mismatch";

    const uint64_t row64 = 1 + 3 * uint64_t{out.width};
    if (raw.size() != row64 * out.height) return "raw data size is not height * (1 + 3 * width)";
    const size_t row = static_cast<size_t>(row64); // raw holds height rows of it: it fits
    out.rgb.clear();
    for (uint32_t y = 0; y < out.height; ++y) {
        const uint8_t* line = &raw[row * y];
        if (line[0] != 0) return "a row filter other than 0";
        out.rgb.insert(out.rgb.end(), line + 1, line + row);
    }
    return "";
}

bool self_test() {
    bool pass = true;
    // 1. The hand-made bytes.
    const uint8_t tiny_rgb[6] = {255, 0, 0, 0, 128, 255};
    const std::vector<uint8_t> tiny = hashgrid_support::encode_png_rgb(tiny_rgb, 2, 1);
    const bool same = tiny.size() == sizeof(kTinyPng) && std::memcmp(tiny.data(), kTinyPng, sizeof(kTinyPng)) == 0;
    std::printf("2 x 1 image: %llu bytes, %s the hand-made bytes\n", static_cast<unsigned long long>(tiny.size()),
                same ? "equal to" : "DIFFERENT from");
    pass = pass && same;
    Decoded d;
    std::string error = decode(std::vector<uint8_t>(kTinyPng, kTinyPng + sizeof(kTinyPng)), d);
    const bool tiny_decodes =
        error.empty() && d.width == 2 && d.height == 1 && d.rgb == std::vector<uint8_t>(tiny_rgb, tiny_rgb + 6);
    std::printf("hand-made bytes decode: %s\n", tiny_decodes ? "ok" : (error.empty() ? "wrong pixels" : error.c_str()));
    pass = pass && tiny_decodes;

    // 2. A larger image whose 72,080 raw bytes take two stored blocks.
    const uint32_t w = 300, h = 80;
    std::vector<uint8_t> rgb(size_t{3} * w * h);
    for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = 0; x < w; ++x) {
            uint8_t* p = &rgb[(size_t{y} * w + x) * 3];
            p[0] = static_cast<uint8_t>(x);
            p[1] = static_cast<uint8_t>(3 * y);
            p[2] = static_cast<uint8_t>(x ^ y);
        }
    const std::vector<uint8_t> big = hashgrid_support::encode_png_rgb(rgb.data(), w, h);
    d = Decoded{};
    error = decode(big, d);
    const bool big_ok = error.empty() && d.width == w && d.height == h && d.blocks == 2 && d.rgb == rgb;
    std::printf("300 x 80 image: %llu bytes, %u stored blocks, round trip %s\n",
                static_cast<unsigned long long>(big.size()), d.blocks,
                big_ok ? "ok" : (error.empty() ? "WRONG" : error.c_str()));
    pass = pass && big_ok;

    // 3. A flipped bit anywhere in a chunk is caught by its CRC.
    std::vector<uint8_t> corrupt = tiny;
    corrupt[50] ^= 0x10u; // a pixel byte inside IDAT
    d = Decoded{};
    const bool caught = decode(corrupt, d) == "CRC mismatch in a chunk";
    std::printf("corrupted pixel byte: %s\n", caught ? "caught by the chunk CRC" : "NOT caught");
    return pass && caught;
}

bool check_file(const char* path, uint32_t expect_w, uint32_t expect_h) {
    std::FILE* f = std::fopen(path, "rb");
    if (f == nullptr) {
        std::printf("cannot open %s\n", path);
        return false;
    }
    std::vector<uint8_t> file;
    uint8_t buffer[4096];
    size_t got = 0;
    while ((got = std::fread(buffer, 1, sizeof(buffer), f)) > 0)
        file.insert(file.end(), buffer, buffer + got);
    std::fclose(f);
    Decoded d;
    const std::string error = decode(file, d);
    if (!error.empty()) {
        std::printf("%s: %s\n", path, error.c_str());
        return false;
    }
    std::printf("%s: %u x %u RGB, %llu bytes, %u chunks with valid CRCs, %u stored blocks, Adler-32 ok\n", path,
                d.width, d.height, static_cast<unsigned long long>(file.size()), d.chunks, d.blocks);
    if (expect_w != 0 && (d.width != expect_w || d.height != expect_h)) {
        std::printf("expected %u x %u\n", expect_w, expect_h);
        return false;
    }
    return true;
}

} // namespace

int main(int argc, char** argv) {
    bool pass = false;
    if (argc == 1) {
        pass = self_test();
    } else if (argc == 2 || argc == 4) {
        uint32_t w = 0, h = 0;
        if (argc == 4 && (!hashgrid_support::parse_u32(argv[2], w) || !hashgrid_support::parse_u32(argv[3], h))) {
            std::fprintf(stderr, "usage: %s [FILE [WIDTH HEIGHT]]\n", argv[0]);
            return 2;
        }
        pass = check_file(argv[1], w, h);
    } else {
        std::fprintf(stderr, "usage: %s [FILE [WIDTH HEIGHT]]\n", argv[0]);
        return 2;
    }
    std::printf("%s\n", pass ? "PASS" : "FAIL");
    return pass ? 0 : 1;
}
