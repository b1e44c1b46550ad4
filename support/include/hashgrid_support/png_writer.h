// SPDX-License-Identifier: MIT
// A tiny, self-contained PNG encoder for the examples' pictures: 8-bit RGB,
// no compression (zlib "stored" deflate blocks), so it needs no library and
// fits in one header. Files are about 3 bytes per pixel; any PNG viewer opens
// them.
//
// Layout (PNG spec, RFC 1950 zlib, RFC 1951 deflate):
//   signature 89 50 4E 47 0D 0A 1A 0A
//   IHDR  width, height (big-endian), depth 8, colour type 2 (RGB), deflate,
//         filter method 0, no interlace
//   IDAT  zlib stream: header 78 01, stored blocks of at most 65535 bytes
//         (a block header byte: 1 on the last block else 0, then LEN and
//         ~LEN, little-endian), Adler-32 of the raw data (big-endian)
//   IEND
// The raw data is each row prefixed with filter byte 0 (none). Every chunk
// ends with the CRC-32 of its type and data (big-endian).
//
//   std::vector<uint8_t> rgb(3 * w * h);          // row-major, top row first
//   hashgrid_support::write_png_rgb("frame.png", rgb.data(), w, h);
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace hashgrid_support {

namespace png_detail {

/// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320) lookup table.
inline const std::array<uint32_t, 256>& crc_table() {
    static const std::array<uint32_t, 256> table = [] {
        std::array<uint32_t, 256> t{};
        for (uint32_t n = 0; n < 256; ++n) {
            uint32_t c = n;
            for (int k = 0; k < 8; ++k)
                c = (c & 1u) != 0 ? 0xedb88320u ^ (c >> 1) : c >> 1;
            t[n] = c;
        }
        return t;
    }();
    return table;
}

} // namespace png_detail

/// CRC-32 of `size` bytes as PNG uses it (initial ~0, final xor ~0).
inline uint32_t crc32(const uint8_t* data, size_t size) {
    const std::array<uint32_t, 256>& table = png_detail::crc_table();
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < size; ++i)
        c = table[(c ^ data[i]) & 0xffu] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

/// Adler-32 (RFC 1950) of `size` bytes.
inline uint32_t adler32(const uint8_t* data, size_t size) {
    uint32_t a = 1;
    uint32_t b = 0;
    for (size_t i = 0; i < size; ++i) {
        a = (a + data[i]) % 65521u;
        b = (b + a) % 65521u;
    }
    return (b << 16) | a;
}

namespace png_detail {

inline void put_u32_be(std::vector<uint8_t>& out, uint32_t v) {
    out.push_back(static_cast<uint8_t>(v >> 24));
    out.push_back(static_cast<uint8_t>(v >> 16));
    out.push_back(static_cast<uint8_t>(v >> 8));
    out.push_back(static_cast<uint8_t>(v));
}

/// Appends one chunk: length, type, data, CRC-32 of type and data.
inline void put_chunk(std::vector<uint8_t>& out, const char (&type)[5], const std::vector<uint8_t>& data) {
    put_u32_be(out, static_cast<uint32_t>(data.size()));
    const size_t crc_start = out.size();
    out.insert(out.end(), type, type + 4);
    out.insert(out.end(), data.begin(), data.end());
    put_u32_be(out, crc32(out.data() + crc_start, out.size() - crc_start));
}

} // namespace png_detail

/// The PNG file of an 8-bit RGB image (3 * width * height bytes, rows top to
/// bottom). Empty when width or height is 0 or the image does not fit in a
/// PNG chunk (2^31 - 1 bytes).
inline std::vector<uint8_t> encode_png_rgb(const uint8_t* rgb, uint32_t width, uint32_t height) {
    std::vector<uint8_t> file;
    const uint64_t row_bytes = 1 + 3 * uint64_t{width};
    const uint64_t raw_bytes = row_bytes * height;
    // zlib header + 5 bytes per stored block + data + Adler-32.
    const uint64_t idat_bytes = 2 + 5 * ((raw_bytes + 65534) / 65535) + raw_bytes + 4;
    if (width == 0 || height == 0 || idat_bytes > 0x7fffffffu) return file;

    // Raw scanlines: filter byte 0, then the row's RGB bytes.
    std::vector<uint8_t> raw;
    raw.reserve(static_cast<size_t>(raw_bytes));
    for (uint32_t y = 0; y < height; ++y) {
        raw.push_back(0);
        const uint8_t* row = rgb + static_cast<size_t>(y) * width * 3;
        raw.insert(raw.end(), row, row + static_cast<size_t>(width) * 3);
    }

    static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a};
    file.insert(file.end(), signature, signature + 8);

    std::vector<uint8_t> ihdr;
    png_detail::put_u32_be(ihdr, width);
    png_detail::put_u32_be(ihdr, height);
    for (uint8_t v :
         {uint8_t{8}, uint8_t{2}, uint8_t{0}, uint8_t{0}, uint8_t{0}}) // depth, RGB, deflate, filter, no interlace
        ihdr.push_back(v);
    png_detail::put_chunk(file, "IHDR", ihdr);

    std::vector<uint8_t> idat;
    idat.reserve(static_cast<size_t>(idat_bytes));
    idat.push_back(0x78); // CMF: deflate, 32 KiB window
    idat.push_back(0x01); // FLG: no dictionary, level 0; (0x78 * 256 + 0x01) % 31 == 0
    size_t offset = 0;
    do { // at least one block, even for empty data (not reachable here, but valid zlib)
        const size_t len = raw.size() - offset < 65535 ? raw.size() - offset : 65535;
        const bool last = offset + len == raw.size();
        idat.push_back(last ? 1 : 0); // BFINAL, BTYPE = 00 (stored)
        idat.push_back(static_cast<uint8_t>(len));
        idat.push_back(static_cast<uint8_t>(len >> 8));
        idat.push_back(static_cast<uint8_t>(~len));
        idat.push_back(static_cast<uint8_t>(~len >> 8));
        idat.insert(idat.end(), raw.begin() + static_cast<std::ptrdiff_t>(offset),
                    raw.begin() + static_cast<std::ptrdiff_t>(offset + len));
        offset += len;
    } while (offset < raw.size());
    png_detail::put_u32_be(idat, adler32(raw.data(), raw.size()));
    png_detail::put_chunk(file, "IDAT", idat);
    png_detail::put_chunk(file, "IEND", {});
    return file;
}

/// Writes encode_png_rgb() to `path` (binary). False when the image is not
/// encodable or the file cannot be written completely.
inline bool write_png_rgb(const char* path, const uint8_t* rgb, uint32_t width, uint32_t height) {
    const std::vector<uint8_t> file = encode_png_rgb(rgb, width, height);
    if (file.empty()) return false;
    std::FILE* f = std::fopen(path, "wb");
    if (f == nullptr) return false;
    const bool written = std::fwrite(file.data(), 1, file.size(), f) == file.size();
    return std::fclose(f) == 0 && written;
}

/// Fills the disc of `radius` pixels around (cx, cy) (pixel units, pixel
/// centres at +0.5; clipped to the picture) in a size x size RGB picture.
inline void fill_disc(std::vector<uint8_t>& rgb, uint32_t size, double cx, double cy, double radius,
                      const uint8_t colour[3]) {
    const int x0 = std::max(0, static_cast<int>(std::floor(cx - radius)));
    const int x1 = std::min(static_cast<int>(size) - 1, static_cast<int>(std::floor(cx + radius)));
    const int y0 = std::max(0, static_cast<int>(std::floor(cy - radius)));
    const int y1 = std::min(static_cast<int>(size) - 1, static_cast<int>(std::floor(cy + radius)));
    for (int py = y0; py <= y1; ++py)
        for (int px = x0; px <= x1; ++px) {
            const double dx = px + 0.5 - cx;
            const double dy = py + 0.5 - cy;
            if (dx * dx + dy * dy <= radius * radius)
                std::memcpy(&rgb[(static_cast<size_t>(py) * size + static_cast<size_t>(px)) * 3], colour, 3);
        }
}

/// Creates `dir` (and its parents) for the pictures an example writes; on
/// failure prints "cannot create DIR: why" and FAIL (what the examples' CTests
/// look for) and returns false.
inline bool create_picture_directory(const std::string& dir) {
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (!error) return true;
    std::printf("cannot create %s: %s\nFAIL\n", dir.c_str(), error.message().c_str());
    return false;
}

} // namespace hashgrid_support
