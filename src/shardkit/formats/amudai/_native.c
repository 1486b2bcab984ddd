/* The hot path of Amudai numeric blocks, in C: a whole cascade of integer encodings
 * (Plain, SingleValue, FLBitPack, FOR, FFOR, Delta, RunLength, Sparse, BlockDictionary,
 * ZigZag, TruncateU8..U64, and ALP over them) decoded in one call, without a numpy call per
 * level.
 *
 * It is an optional accelerator of shardkit.formats.amudai.blocks: _decode_num there is the
 * pure-Python twin, which gives the same values and raises the precise errors. Whatever is
 * unusual (a size that does not fit, a count over the cap, a code or a width that does not
 * apply, a nesting too deep) makes decode_numeric answer None, and the caller takes the Python
 * path, which names the field and byte offset at fault. Encodings that need a codec or floats
 * (LZ4, Zstd, ALPRD) also answer None: the Python path decodes them, and calls this again
 * for the integer cascades nested in them.
 *
 * Every size read from the bytes is checked against the bytes that remain before it is used;
 * every count is capped (MAX_BLOCK_VALUES) before anything is allocated; every temporary is
 * freed once, on every path. Layouts: FORMAT_NOTES.md section 4.4 and blocks.py.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CASCADE_DEPTH 16
#define MAX_BLOCK_VALUES ((int64_t)1 << 24)

enum {
    PLAIN = 1, FL_BIT_PACK, FOR_, FFOR, DELTA, RUN_LENGTH, SINGLE_VALUE,
    TRUNCATE_U8, TRUNCATE_U16, TRUNCATE_U32, TRUNCATE_U64,
    ALP, ALPRD, BLOCK_DICTIONARY, FSST, ZSTD, LZ4, ZIGZAG, SPARSE
};

/* Answers of dec(): OK, or FALLBACK (the Python path decides: an error or a codec), or
 * NOMEM (a Python MemoryError is set). */
#define OK 0
#define FALLBACK (-1)
#define NOMEM (-2)

typedef struct {
    const uint8_t *buf;
    int64_t len;
} Sec;

static const int FL_ORDER[8] = {0, 4, 2, 6, 1, 5, 3, 7};

/* ALP's F10 (exact) and IF10 (correctly rounded literals), as alp.rs spells them; f32 uses
 * the first 11 of each, rounded from these doubles (as blocks.py's tables are). */
static const double ALP_F10[24] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23};
static const double ALP_IF10[24] = {
    1e-0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11,
    1e-12, 1e-13, 1e-14, 1e-15, 1e-16, 1e-17, 1e-18, 1e-19, 1e-20, 1e-21, 1e-22, 1e-23};

static inline int fits(int64_t pos, int64_t count, int64_t end) {
    return count >= 0 && pos >= 0 && pos <= end && count <= end - pos;
}

static inline uint64_t rd(const uint8_t *p, int w) {
    uint64_t v = 0;
    memcpy(&v, p, (size_t)w); /* little-endian hosts only (checked at import) */
    return v;
}

static inline void wr(uint8_t *p, int w, uint64_t v) { memcpy(p, &v, (size_t)w); }

static inline uint32_t le32(const uint8_t *p) { return (uint32_t)rd(p, 4); }

static inline int64_t meta_size(int64_t own) { return (own + 2 + 7) / 8 * 8 - 2; }

static inline int64_t round8(int64_t pos) { return (pos + 7) / 8 * 8; }

static inline uint64_t mask_of(int w) { return w >= 8 ? ~(uint64_t)0 : (((uint64_t)1 << (8 * w)) - 1); }

static int dec(const Sec *s, int64_t start, int64_t end, int64_t n, int w, char kind, int depth,
               uint8_t *out);

/* n values of width w decoded into a fresh buffer (freed by the caller). */
static int dec_alloc(const Sec *s, int64_t start, int64_t end, int64_t n, int w, char kind,
                     int depth, uint8_t **res) {
    *res = NULL;
    if (n < 0 || n > MAX_BLOCK_VALUES) return FALLBACK;
    uint8_t *b = (uint8_t *)malloc((size_t)(n * w) + 8);
    if (!b) {
        PyErr_NoMemory();
        return NOMEM;
    }
    int rc = dec(s, start, end, n, w, kind, depth, b);
    if (rc != OK) {
        free(b);
        return rc;
    }
    *res = b;
    return OK;
}

/* FastLanes unpack, one function per word type: chunks of 1024 values; lane l (of 1024 / B)
 * holds the W-bit values of rows r = 0..B (LSB first) whose element index is
 * ORDER[r/8]*16 + (r%8)*128 + l; word k of lane l is stored at LANES*k + l (blocks.py,
 * _fastlanes_unpack). A chunk is copied to an aligned buffer first (the bytes may be
 * unaligned), and the last chunk's values past n are dropped. */
#define FL_UNPACK(T, BITS)                                                                     \
    static void fl_##BITS(const uint8_t *src, int64_t chunks, int width, int64_t n,           \
                          uint8_t *out) {                                                     \
        enum { LANES = 1024 / BITS };                                                        \
        T words[BITS * LANES];                                                               \
        T tmp[1024];                                                                         \
        const T mask = width >= BITS ? (T)~(T)0 : (T)(((uint64_t)1 << width) - 1);            \
        for (int64_t c = 0; c < chunks; c++) {                                               \
            memcpy(words, src + (size_t)(c * width * LANES) * sizeof(T),                      \
                   (size_t)(width * LANES) * sizeof(T));                                      \
            for (int r = 0; r < BITS; r++) {                                                 \
                int first = r * width / BITS, shift = r * width % BITS;                      \
                T *dst = tmp + FL_ORDER[r / 8] * 16 + (r % 8) * 128;                         \
                const T *lo = words + first * LANES;                                          \
                if (shift + width > BITS) {                                                  \
                    const T *hi = lo + LANES;                                                \
                    for (int l = 0; l < LANES; l++)                                          \
                        dst[l] = (T)((T)(lo[l] >> shift) | (T)(hi[l] << (BITS - shift))) & mask; \
                } else {                                                                     \
                    for (int l = 0; l < LANES; l++) dst[l] = (T)(lo[l] >> shift) & mask;     \
                }                                                                            \
            }                                                                                \
            int64_t left = n - c * 1024;                                                     \
            memcpy(out + (size_t)(c * 1024) * sizeof(T), tmp,                                 \
                   (size_t)(left < 1024 ? left : 1024) * sizeof(T));                          \
        }                                                                                    \
    }
FL_UNPACK(uint8_t, 8)
FL_UNPACK(uint16_t, 16)
FL_UNPACK(uint32_t, 32)
FL_UNPACK(uint64_t, 64)

/* n values of w bytes bit-packed with `width` bits at pos (blocks.py, _fastlanes_unpack). */
static int fl_unpack(const Sec *s, int64_t pos, int64_t end, int64_t n, int w, int width,
                     uint8_t *out) {
    int bits = 8 * w;
    if (width > bits) return FALLBACK;
    if (width == 0 || n == 0) {
        memset(out, 0, (size_t)(n * w));
        return OK;
    }
    int lanes = 1024 / bits;
    int64_t chunks = (n + 1023) / 1024;
    int64_t words = chunks * width * lanes;
    if (!fits(pos, words * w, end)) return FALLBACK;
    const uint8_t *src = s->buf + pos;
    switch (w) {
    case 1: fl_8(src, chunks, width, n, out); break;
    case 2: fl_16(src, chunks, width, n, out); break;
    case 4: fl_32(src, chunks, width, n, out); break;
    default: fl_64(src, chunks, width, n, out); break;
    }
    return OK;
}

/* out[i] += ref (wrapping), out[i] = prefix sum (wrapping), per width */
#define PER_WIDTH(NAME, BODY)                                                                  \
    static void NAME(uint8_t *out, int64_t n, int w, uint64_t ref) {                          \
        switch (w) {                                                                         \
        case 1: { typedef uint8_t T; BODY; break; }                                          \
        case 2: { typedef uint16_t T; BODY; break; }                                         \
        case 4: { typedef uint32_t T; BODY; break; }                                         \
        default: { typedef uint64_t T; BODY; break; }                                        \
        }                                                                                    \
    }
PER_WIDTH(add_ref, for (int64_t i = 0; i < n; i++) {
    T v; memcpy(&v, out + i * sizeof(T), sizeof(T)); v = (T)(v + (T)ref);
    memcpy(out + i * sizeof(T), &v, sizeof(T)); })
PER_WIDTH(prefix_sum, T acc = (T)ref; for (int64_t i = 0; i < n; i++) {
    T v; memcpy(&v, out + i * sizeof(T), sizeof(T)); acc = (T)(acc + v);
    memcpy(out + i * sizeof(T), &acc, sizeof(T)); })

static int dec(const Sec *s, int64_t start, int64_t end, int64_t n, int w, char kind, int depth,
               uint8_t *out) {
    if (depth > MAX_CASCADE_DEPTH || n < 0 || n > MAX_BLOCK_VALUES) return FALLBACK;
    if (end > s->len || !fits(start, 2, end)) return FALLBACK;
    const uint8_t *b = s->buf;
    int code = (int)(b[start] | (b[start + 1] << 8));
    int64_t body = start + 2;
    int rc;
    if (code == PLAIN) {
        if (!fits(body, n * w, end)) return FALLBACK;
        memcpy(out, b + body, (size_t)(n * w));
        return OK;
    }
    if (code == SINGLE_VALUE) {
        if (!fits(body, w, end)) return FALLBACK;
        for (int64_t i = 0; i < n; i++) memcpy(out + i * w, b + body, (size_t)w);
        return OK;
    }
    if (code == RUN_LENGTH) {
        if (!fits(body, 10, end)) return FALLBACK;
        int64_t size = le32(b + body), runs = le32(b + body + 4);
        int v_casc = b[body + 8], l_casc = b[body + 9];
        int64_t pos = body + meta_size(10);
        if (runs > n || !fits(pos, size, end)) return FALLBACK;
        uint8_t *vals = NULL, *lens = NULL;
        if (v_casc) {
            if ((rc = dec_alloc(s, pos, pos + size, runs, w, kind, depth + 1, &vals)) != OK)
                return rc;
        } else if (!fits(pos, runs * w, pos + size)) {
            return FALLBACK;
        }
        const uint8_t *vp = v_casc ? vals : b + pos;
        int64_t lpos = round8(pos + size);
        if (l_casc) {
            if ((rc = dec_alloc(s, lpos, end, runs, 4, 'u', depth + 1, &lens)) != OK) {
                free(vals);
                return rc;
            }
        } else if (!fits(lpos, runs * 4, end)) {
            free(vals);
            return FALLBACK;
        }
        const uint8_t *lp = l_casc ? lens : b + lpos;
        uint64_t total = 0;
        for (int64_t i = 0; i < runs; i++) total += le32(lp + 4 * i);
        if (total != (uint64_t)n) {
            free(vals);
            free(lens);
            return FALLBACK;
        }
        int64_t o = 0;
        for (int64_t i = 0; i < runs; i++) {
            uint32_t len = le32(lp + 4 * i);
            uint64_t v = rd(vp + i * w, w);
            switch (w) {
            case 1: memset(out + o, (int)v, len); break;
            case 2: for (uint32_t k = 0; k < len; k++) { uint16_t x = (uint16_t)v; memcpy(out + (o + k) * 2, &x, 2); } break;
            case 4: for (uint32_t k = 0; k < len; k++) { uint32_t x = (uint32_t)v; memcpy(out + (o + k) * 4, &x, 4); } break;
            default: for (uint32_t k = 0; k < len; k++) memcpy(out + (o + k) * 8, &v, 8); break;
            }
            o += len;
        }
        free(vals);
        free(lens);
        return OK;
    }
    if (code == SPARSE) {
        if (!fits(body, 10, end)) return FALLBACK;
        int64_t count = le32(b + body), size = le32(b + body + 4);
        int p_casc = b[body + 8], v_casc = b[body + 9];
        int64_t pos = body + meta_size(10);
        if (count > n || !fits(pos, size, end)) return FALLBACK;
        uint8_t *posb = NULL, *vals = NULL;
        if (p_casc) {
            if ((rc = dec_alloc(s, pos, pos + size, count, 4, 'u', depth + 1, &posb)) != OK)
                return rc;
        } else if (!fits(pos, count * 4, pos + size)) {
            return FALLBACK;
        }
        const uint8_t *pp = p_casc ? posb : b + pos;
        int64_t vpos = round8(pos + size);
        if (v_casc) {
            if ((rc = dec_alloc(s, vpos, end, count, w, kind, depth + 1, &vals)) != OK) {
                free(posb);
                return rc;
            }
        } else if (!fits(vpos, count * w, end)) {
            free(posb);
            return FALLBACK;
        }
        const uint8_t *vp = v_casc ? vals : b + vpos;
        for (int64_t i = 0; i < count; i++) {
            if (le32(pp + 4 * i) >= (uint64_t)n) {
                free(posb);
                free(vals);
                return FALLBACK;
            }
        }
        memset(out, 0, (size_t)(n * w));
        for (int64_t i = 0; i < count; i++)
            memcpy(out + (int64_t)le32(pp + 4 * i) * w, vp + i * w, (size_t)w);
        free(posb);
        free(vals);
        return OK;
    }
    if (code == BLOCK_DICTIONARY) {
        if (!fits(body, 9, end)) return FALLBACK;
        int64_t size = le32(b + body), unique = le32(b + body + 4);
        int v_casc = b[body + 8];
        int64_t pos = body + meta_size(9);
        if (unique > n || !fits(pos, size, end)) return FALLBACK;
        uint8_t *codes = NULL, *vals = NULL;
        if ((rc = dec_alloc(s, pos, pos + size, n, 4, 'u', depth + 1, &codes)) != OK) return rc;
        int64_t vpos = pos + size;
        if (v_casc) {
            if ((rc = dec_alloc(s, vpos, end, unique, w, kind, depth + 1, &vals)) != OK) {
                free(codes);
                return rc;
            }
        } else if (!fits(vpos, unique * w, end)) {
            free(codes);
            return FALLBACK;
        }
        const uint8_t *vp = v_casc ? vals : b + vpos;
        for (int64_t i = 0; i < n; i++) {
            if ((int64_t)le32(codes + 4 * i) > unique) {
                free(codes);
                free(vals);
                return FALLBACK;
            }
        }
        for (int64_t i = 0; i < n; i++) {
            uint32_t c = le32(codes + 4 * i);
            if (c == 0)
                memset(out + i * w, 0, (size_t)w);
            else
                memcpy(out + i * w, vp + (int64_t)(c - 1) * w, (size_t)w);
        }
        free(codes);
        free(vals);
        return OK;
    }
    if (code == ALP && kind == 'f' && (w == 4 || w == 8)) {
        /* [u32 integers_size, u16 exceptions_count, u8 e, u8 f, 6 pad][nested i32/i64]
         * [count x u32 position][count x f32/f64 value] (blocks.py, _decode_alp): value =
         * (int as float) * F10[f] * IF10[e], left to right in the float type */
        if (!fits(body, meta_size(8), end)) return FALLBACK;
        int64_t size = le32(b + body), count = b[body + 4] | (b[body + 5] << 8);
        int e = b[body + 6], f = b[body + 7];
        int64_t pos = body + meta_size(8);
        int top = w == 4 ? 10 : 23;
        if (e > top || f > top || !fits(pos, size, end)) return FALLBACK;
        if ((rc = dec(s, pos, pos + size, n, w, 'i', depth + 1, out)) != OK) return rc;
        int64_t xpos = pos + size;
        if (count && (!fits(xpos, 4 * count, end) || !fits(xpos + 4 * count, count * w, end)))
            return FALLBACK;
        for (int64_t i = 0; i < count; i++)
            if ((int64_t)le32(b + xpos + 4 * i) >= n) return FALLBACK;
        if (w == 8) {
            double f10 = ALP_F10[f], if10 = ALP_IF10[e];
            for (int64_t i = 0; i < n; i++) {
                int64_t v;
                memcpy(&v, out + i * 8, 8);
                double x = (double)v * f10; /* rounded to double before the next */
                double y = x * if10;
                memcpy(out + i * 8, &y, 8);
            }
        } else {
            float f10 = (float)ALP_F10[f], if10 = (float)ALP_IF10[e];
            for (int64_t i = 0; i < n; i++) {
                int32_t v;
                memcpy(&v, out + i * 4, 4);
                float x = (float)v * f10;
                float y = x * if10;
                memcpy(out + i * 4, &y, 4);
            }
        }
        for (int64_t i = 0; i < count; i++)
            memcpy(out + (int64_t)le32(b + xpos + 4 * i) * w, b + xpos + 4 * count + i * w,
                   (size_t)w);
        return OK;
    }
    /* the rest apply to integers only; codecs and floats are the Python path's */
    if (kind != 'i' && kind != 'u') return FALLBACK;
    if (code == FL_BIT_PACK) {
        if (!fits(body, 1, end)) return FALLBACK;
        return fl_unpack(s, body + meta_size(1), end, n, w, b[body], out);
    }
    if (code == FOR_ || code == FFOR) {
        if (!fits(body, w, end)) return FALLBACK;
        uint64_t ref = rd(b + body, w);
        if (code == FFOR) {
            if (!fits(body + w, 1, end)) return FALLBACK;
            rc = fl_unpack(s, body + meta_size(w + 1), end, n, w, b[body + w], out);
        } else {
            if (!fits(body, meta_size(w), end)) return FALLBACK;
            rc = dec(s, body + meta_size(w), end, n, w, 'u', depth + 1, out);
        }
        if (rc != OK) return rc;
        add_ref(out, n, w, ref);
        return OK;
    }
    if (code == DELTA) {
        if (!fits(body, w, end) || !fits(body, meta_size(w), end)) return FALLBACK;
        if (n == 0) return OK;
        uint64_t acc = rd(b + body, w);
        /* the n - 1 differences land after the base, then a wrapping prefix sum */
        rc = dec(s, body + meta_size(w), end, n - 1, w, kind, depth + 1, out + w);
        if (rc != OK) return rc;
        wr(out, w, 0);
        prefix_sum(out, n, w, acc);
        return OK;
    }
    if (code == ZIGZAG || (code >= TRUNCATE_U8 && code <= TRUNCATE_U64)) {
        if (!fits(body, 1, end) || !fits(body, meta_size(1), end)) return FALLBACK;
        int cascading = b[body];
        int64_t data = body + meta_size(1);
        int iw = code == ZIGZAG ? w : (code == TRUNCATE_U8 ? 1 : code == TRUNCATE_U16 ? 2
                                       : code == TRUNCATE_U32 ? 4 : 8);
        if (iw > w) return FALLBACK;
        uint8_t *got = NULL;
        const uint8_t *gp;
        if (cascading) {
            if ((rc = dec_alloc(s, data, end, n, iw, 'u', depth + 1, &got)) != OK) return rc;
            gp = got;
        } else {
            if (!fits(data, n * iw, end)) return FALLBACK;
            gp = b + data;
        }
        if (code == ZIGZAG) {
            for (int64_t i = 0; i < n; i++) {
                uint64_t g = rd(gp + i * w, w);
                wr(out + i * w, w, (g >> 1) ^ (uint64_t)(-(int64_t)(g & 1)));
            }
        } else if (kind == 'i' && iw < 8) {
            int sh = 64 - 8 * iw;
            for (int64_t i = 0; i < n; i++) {
                int64_t v = (int64_t)(rd(gp + i * iw, iw) << sh) >> sh;
                wr(out + i * w, w, (uint64_t)v);
            }
        } else {
            for (int64_t i = 0; i < n; i++) wr(out + i * w, w, rd(gp + i * iw, iw));
        }
        free(got);
        return OK;
    }
    return FALLBACK; /* LZ4, Zstd, ALP, ALPRD, FSST, unknown codes: the Python path */
}

static PyObject *decode_numeric(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    Py_ssize_t start, end, n;
    int w, kind, depth;
    if (!PyArg_ParseTuple(args, "y*nnniCi", &view, &start, &end, &n, &w, &kind, &depth))
        return NULL;
    PyObject *res = NULL;
    if (n < 0 || n > MAX_BLOCK_VALUES || (w != 1 && w != 2 && w != 4 && w != 8) ||
        (kind != 'i' && kind != 'u' && kind != 'f') || start < 0 || end > view.len) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    Sec s = {(const uint8_t *)view.buf, (int64_t)view.len};
    uint8_t *out = NULL;
    int rc = dec_alloc(&s, start, end, n, w, (char)kind, depth, &out);
    if (rc == OK) {
        res = PyByteArray_FromStringAndSize((const char *)out, (Py_ssize_t)(n * w));
        free(out);
    } else if (rc == FALLBACK) {
        res = Py_None;
        Py_INCREF(res);
    }
    PyBuffer_Release(&view);
    return res;
}

/* One block's framing (blocks.py, split_block, without the checksum, which the caller has
 * checked): OK, its values section and its presence section (len 0: none; blocks.py,
 * decode_presence, reads it), else FALLBACK. */
static int block_sections(const uint8_t *raw, int64_t size, int embedded_presence,
                          int has_checksum, Sec *values, Sec *presence) {
    int64_t tail = has_checksum ? 4 : 0;
    if (size < 8 + tail) return FALLBACK;
    int64_t len_presence = le32(raw), len_values = le32(raw + 4), pos = 8;
    presence->buf = raw;
    presence->len = 0;
    if (embedded_presence) {
        if (len_presence > size - tail - pos) return FALLBACK;
        presence->buf = raw + pos;
        presence->len = len_presence;
        pos = round8(pos + len_presence);
    }
    if (len_values > size - tail - pos || len_values < 2) return FALLBACK;
    values->buf = raw + pos;
    values->len = len_values;
    return OK;
}

/* A presence section's valid flags (1 present, 0 null) for n values into valid[0..n)
 * (blocks.py, decode_presence): kind 1 all null, kind 2 a byte per value; roaring (kind 3)
 * and anything else: FALLBACK (the Python path reads or refuses it). */
static int presence_flags(const Sec *p, int64_t n, uint8_t *valid) {
    if (p->len < 1) return FALLBACK;
    if (p->buf[0] == 1) {
        memset(valid, 0, (size_t)n);
        return OK;
    }
    if (p->buf[0] == 2 && p->len - 1 == n) {
        for (int64_t i = 0; i < n; i++) valid[i] = p->buf[1 + i] != 0;
        return OK;
    }
    return FALLBACK;
}

/* decode_blocks(blocks, counts, width, kind, embedded_presence, has_checksum): the values of
 * consecutive blocks decoded into one buffer until a block is declined, and their valid
 * flags (a bytearray, or None when no block of the run has a presence section). */
static PyObject *decode_blocks(PyObject *self, PyObject *args) {
    PyObject *blocks, *counts;
    int w, kind, embedded_presence, has_checksum;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOiCpp", &blocks, &counts, &w, &kind, &embedded_presence,
                          &has_checksum))
        return NULL;
    if ((w != 1 && w != 2 && w != 4 && w != 8) || (kind != 'i' && kind != 'u' && kind != 'f'))
        return Py_BuildValue("(ynO)", "", (Py_ssize_t)0, Py_None);
    PyObject *bl = PySequence_Fast(blocks, "blocks must be a sequence");
    if (!bl) return NULL;
    PyObject *cn = PySequence_Fast(counts, "counts must be a sequence");
    if (!cn) {
        Py_DECREF(bl);
        return NULL;
    }
    Py_ssize_t nb = PySequence_Fast_GET_SIZE(bl);
    if (PySequence_Fast_GET_SIZE(cn) != nb) {
        Py_DECREF(bl);
        Py_DECREF(cn);
        PyErr_SetString(PyExc_ValueError, "as many counts as blocks");
        return NULL;
    }
    int64_t total = 0;
    Py_ssize_t usable = 0;
    for (; usable < nb; usable++) { /* counts: each within the cap, the run within 2^31 */
        int64_t c = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(cn, usable));
        if (c == -1 && PyErr_Occurred()) {
            Py_DECREF(bl);
            Py_DECREF(cn);
            return NULL;
        }
        if (c < 0 || c > MAX_BLOCK_VALUES || total + c > ((int64_t)1 << 31) / w) break;
        total += c;
    }
    PyObject *out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(total * w));
    if (!out) {
        Py_DECREF(bl);
        Py_DECREF(cn);
        return NULL;
    }
    PyObject *flags = NULL; /* made at the first block with a presence section */
    int any_presence = 0;   /* a block decoded with one (else flags: None, as in Python) */
    uint8_t *dst = (uint8_t *)PyByteArray_AS_STRING(out);
    int64_t at = 0;
    Py_ssize_t done = 0;
    int rc = OK;
    for (; done < usable; done++) {
        int64_t c = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(cn, done));
        Py_buffer view;
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(bl, done), &view, PyBUF_SIMPLE) < 0) {
            rc = NOMEM;
            break;
        }
        Sec sec, pres;
        rc = block_sections((const uint8_t *)view.buf, (int64_t)view.len, embedded_presence,
                            has_checksum, &sec, &pres);
        if (rc == OK && pres.len > 0 && !flags) {
            flags = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)total);
            if (!flags) {
                rc = NOMEM;
            } else {
                memset(PyByteArray_AS_STRING(flags), 1, (size_t)at);
            }
        }
        uint8_t *valid = flags ? (uint8_t *)PyByteArray_AS_STRING(flags) + at : NULL;
        if (rc == OK && pres.len > 0) rc = presence_flags(&pres, c, valid);
        if (rc == OK) rc = dec(&sec, 0, sec.len, c, w, (char)kind, 0, dst + at * w);
        if (rc == OK && valid && pres.len == 0) memset(valid, 1, (size_t)c);
        PyBuffer_Release(&view);
        if (rc != OK) break;
        if (pres.len > 0) any_presence = 1;
        at += c;
    }
    Py_DECREF(bl);
    Py_DECREF(cn);
    if (rc == NOMEM) {
        Py_DECREF(out);
        Py_XDECREF(flags);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return NULL;
    }
    if (flags && !any_presence) Py_CLEAR(flags); /* made at a block then declined */
    if (!flags) return Py_BuildValue("(NnO)", out, done, Py_None);
    return Py_BuildValue("(NnN)", out, done, flags);
}

/* gather(data, offsets, ids, nulls): the entries ids[i] of a table of byte strings (entry j
 * is data[offsets[j]:offsets[j + 1]], int64 offsets) concatenated, and their n + 1 int64
 * offsets; a slot whose nulls byte is non-zero is empty. None when an offset or an id does
 * not fit the table (the caller's take path answers). */
static PyObject *gather(PyObject *self, PyObject *args) {
    Py_buffer data, offs, ids, nulls;
    PyObject *res = NULL;
    (void)self;
    nulls.buf = NULL;
    nulls.obj = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*z*", &data, &offs, &ids, &nulls)) return NULL;
    int64_t m = offs.len / 8 - 1, n = ids.len / 4;
    const uint8_t *skip = (const uint8_t *)nulls.buf;
    int ok = m >= 0 && offs.len % 8 == 0 && ids.len % 4 == 0 && (!skip || nulls.len == n);
    const uint8_t *ob = (const uint8_t *)offs.buf, *ib = (const uint8_t *)ids.buf;
    for (int64_t j = 0; ok && j <= m; j++) { /* increasing from 0 within the data */
        int64_t a;
        memcpy(&a, ob + 8 * j, 8);
        if (a < 0 || a > data.len) ok = 0;
        if (j) {
            int64_t p;
            memcpy(&p, ob + 8 * (j - 1), 8);
            if (a < p) ok = 0;
        } else if (a != 0) {
            ok = 0;
        }
    }
    int64_t total = 0;
    for (int64_t i = 0; ok && i < n; i++) {
        if (skip && skip[i]) continue;
        uint32_t id = le32(ib + 4 * i);
        if ((int64_t)id >= m) {
            ok = 0;
            break;
        }
        int64_t a, b;
        memcpy(&a, ob + 8 * (int64_t)id, 8);
        memcpy(&b, ob + 8 * ((int64_t)id + 1), 8);
        total += b - a;
        if (total > PY_SSIZE_T_MAX / 2) ok = 0;
    }
    if (!ok) {
        res = Py_None;
        Py_INCREF(res);
        goto done;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (!out) goto done;
    PyObject *pos = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)((n + 1) * 8));
    if (!pos) {
        Py_DECREF(out);
        goto done;
    }
    uint8_t *dst = (uint8_t *)PyBytes_AS_STRING(out), *pp = (uint8_t *)PyByteArray_AS_STRING(pos);
    const uint8_t *src = (const uint8_t *)data.buf;
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        memcpy(pp + 8 * i, &at, 8);
        if (skip && skip[i]) continue;
        uint32_t id = le32(ib + 4 * i);
        int64_t a, b;
        memcpy(&a, ob + 8 * (int64_t)id, 8);
        memcpy(&b, ob + 8 * ((int64_t)id + 1), 8);
        memcpy(dst + at, src + a, (size_t)(b - a));
        at += b - a;
    }
    memcpy(pp + 8 * n, &at, 8);
    res = Py_BuildValue("(NN)", out, pos);
done:
    PyBuffer_Release(&data);
    PyBuffer_Release(&offs);
    PyBuffer_Release(&ids);
    PyBuffer_Release(&nulls);
    return res;
}

static PyMethodDef module_methods[] = {
    {"decode_numeric", decode_numeric, METH_VARARGS,
     "decode_numeric(section, start, end, n, width, kind, depth) -> bytearray of n values, or None "
     "(the Python path answers)"},
    {"decode_blocks", decode_blocks, METH_VARARGS,
     "decode_blocks(blocks, counts, width, kind, embedded_presence, has_checksum) -> "
     "(bytearray, done, valid): the values of the first `done` blocks (checksums checked by "
     "the caller; roaring presence or anything unusual stops the run) and their valid flags "
     "(a byte each, or None when no block has a presence section)"},
    {"gather", gather, METH_VARARGS,
     "gather(data, offsets, ids, nulls) -> (bytes, bytearray of int64 offsets), or None: "
     "dictionary entries expanded (nulls: a byte per id, non-zero for an empty slot, or None)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native",
    "C hot path of Amudai numeric cascades (optional; the Python path gives the same answers)",
    -1, module_methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    const uint16_t probe = 1;
    if (*(const uint8_t *)&probe != 1) {
        PyErr_SetString(PyExc_ImportError, "amudai _native needs a little-endian host");
        return NULL;
    }
    return PyModule_Create(&module);
}
