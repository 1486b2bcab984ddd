/* The hot path of SWH read-shard lookups, in C: cmph's lookup2 (Jenkins) hash, the CHD_PH
 * slot (compressed_seq_query over the select structure, without decoding a block), the index
 * probe and the copy of the value.
 *
 * It is an optional accelerator of shardkit.formats.swh: every function here has a pure-Python
 * twin (shardkit.hashing.cmph_chd, shardkit.formats.swh.reader) that gives the same answers and
 * raises the precise errors. Whatever is unusual (a select block that does not check, a key
 * that is absent, a tombstone, an offset out of bounds, a short read) makes these functions
 * answer "not here" (None, -1 or a short count), and the caller takes the Python path, which
 * names the field and byte offset at fault. The dump layout was checked by parse_layout()
 * before a Lookup is built, so every region offset given here lies inside the dump buffer.
 *
 * A select block (128 buckets) is checked in full, with the same rules as the Python decoder
 * (LazyChdPh._decode_block), the first time a key lands in it; a bit per block remembers it.
 *
 * Threads: get's reads that would wait for the disk (pread; what the page cache holds is read
 * at once with RWF_NOWAIT, the GIL kept), slots_into and check_all run without the GIL. Each
 * such call counts itself in `active` (under the GIL) before it lets go; close() and a second
 * __init__ stop new calls at once and free the buffers only when `active` is back to 0, so a
 * read never runs on released memory or a closed descriptor. The per-block "checked" bits and
 * the read-size guess are shared between threads and updated with atomic operations.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sched.h>
#include <sys/uio.h>
#include <unistd.h>

#include "layouts.h" /* generated from schemas/swh_read_shard.ksy by make generate */

/* An index entry: the key, then the object's offset; an object: its size, then its bytes. */
#define KEY_LEN SHARDKIT_SWH_READ_SHARD__INDEX_ENTRY_F_KEY_SIZE
#define SLOT_SIZE SHARDKIT_SWH_READ_SHARD__INDEX_ENTRY_SIZE
#define ENTRY_OFS SHARDKIT_SWH_READ_SHARD__INDEX_ENTRY_F_OFS_OBJECT_OFFSET
#define OBJ_HEAD SHARDKIT_SWH_READ_SHARD__SHARD_OBJECT__HEAD_SIZE
#if SHARDKIT_SWH_READ_SHARD__INDEX_ENTRY_F_KEY_OFFSET != 0 || \
    SHARDKIT_SWH_READ_SHARD__INDEX_ENTRY_F_OFS_OBJECT_SIZE != 8 || \
    SHARDKIT_SWH_READ_SHARD__SHARD_OBJECT__HEAD_F_LEN_DATA_SIZE != 8
#error "the SWH index entry or object head changed shape: be64() reads 8 bytes there"
#endif
#define STEP 128
#define MAX_FIELD_BITS 31
/* An object's size is read together with the start of its bytes, in one pread of `spec`
 * bytes: the last value's size plus its 8-byte header, between SPEC_MIN and SPEC_MAX. Reading
 * more than the value costs a copy of cold memory (a 4 KiB read of a 64-byte value spent a
 * quarter of the lookup copying), and reading less costs a second pread for the rest. */
#define SPEC_MIN 128
#define SPEC_MAX 4096

static inline uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static inline uint64_t be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return v;
}

#define MIX(a, b, c)                   \
    do {                               \
        a -= b; a -= c; a ^= (c >> 13); \
        b -= c; b -= a; b ^= (a << 8);  \
        c -= a; c -= b; c ^= (b >> 13); \
        a -= b; a -= c; a ^= (c >> 12); \
        b -= c; b -= a; b ^= (a << 16); \
        c -= a; c -= b; c ^= (b >> 5);  \
        a -= b; a -= c; a ^= (c >> 3);  \
        b -= c; b -= a; b ^= (a << 10); \
        c -= a; c -= b; c ^= (b >> 15); \
    } while (0)

/* cmph's __jenkins_hash_vector: lookup2 keeping all three words; key bytes unsigned. */
static void jenkins(uint32_t seed, const uint8_t *k, size_t length, uint32_t out[3]) {
    uint32_t a = 0x9e3779b9u, b = 0x9e3779b9u, c = seed;
    size_t len = length;
    while (len >= 12) {
        a += le32(k);
        b += le32(k + 4);
        c += le32(k + 8);
        MIX(a, b, c);
        k += 12;
        len -= 12;
    }
    c += (uint32_t)length;
    switch (len) { /* every case falls through */
    case 11: c += (uint32_t)k[10] << 24; /* fall through */
    case 10: c += (uint32_t)k[9] << 16;  /* fall through */
    case 9: c += (uint32_t)k[8] << 8;    /* fall through */
    case 8: b += (uint32_t)k[7] << 24;   /* fall through */
    case 7: b += (uint32_t)k[6] << 16;   /* fall through */
    case 6: b += (uint32_t)k[5] << 8;    /* fall through */
    case 5: b += k[4];                   /* fall through */
    case 4: a += (uint32_t)k[3] << 24;   /* fall through */
    case 3: a += (uint32_t)k[2] << 16;   /* fall through */
    case 2: a += (uint32_t)k[1] << 8;    /* fall through */
    case 1: a += k[0];                   /* fall through */
    default: break;
    }
    MIX(a, b, c);
    out[0] = a;
    out[1] = b;
    out[2] = c;
}

typedef struct {
    PyObject_HEAD
    Py_buffer dump;      /* the cmph dump (a view of the mapping, or bytes) */
    int has_dump;
    Py_buffer file;      /* the whole file, when mapped (else len 0) */
    int has_file;
    int fd;              /* read the index and objects with pread when >= 0 */
    uint32_t n, nbuckets, seed, rem_r, samples;
    uint64_t total_length, nbits;
    uint64_t bits_vec, select_table, length_rems, store_table, dump_size;
    uint64_t index_pos, num_slots, obj_lo, obj_hi;
    uint64_t spec;       /* bytes read with an object's size (see SPEC_MIN) */
    uint8_t *checked;    /* one bit per select block: checked */
    int ready;           /* every field above is set and the buffers are held */
    int active;          /* calls running without the GIL (changed with the GIL held) */
} Lookup;

/* bit field [pos, pos + width) of the little-endian table at byte offset base of the dump;
 * width <= 57; bytes past the dump read as zeros. */
static inline uint64_t bits_at(const Lookup *L, uint64_t base, uint64_t pos, unsigned width) {
    const uint8_t *d = (const uint8_t *)L->dump.buf;
    uint64_t byte = base + (pos >> 3), end = (uint64_t)L->dump.len, w = 0;
    if (byte + 8 <= end) {
        for (int i = 7; i >= 0; i--) w = (w << 8) | d[byte + i];
    } else {
        for (int i = 7; i >= 0; i--) w = (w << 8) | (byte + i < end ? d[byte + i] : 0);
    }
    w >>= (pos & 7);
    return width >= 64 ? w : (w & ((UINT64_C(1) << width) - 1));
}

static inline int bit_of(const Lookup *L, uint64_t p) {
    return (((const uint8_t *)L->dump.buf)[L->bits_vec + (p >> 3)] >> (p & 7)) & 1;
}

static inline uint64_t rem_of(const Lookup *L, uint64_t i) {
    return L->rem_r ? bits_at(L, L->length_rems, i * L->rem_r, L->rem_r) : 0;
}

static inline uint32_t sample(const Lookup *L, uint64_t k) {
    return le32((const uint8_t *)L->dump.buf + L->select_table + 4 * k);
}

/* Position of the highest one in [lo, hi) of the bit vector (hi - lo <= 32), or -1. */
static int64_t one_before(const Lookup *L, uint64_t hi) {
    uint64_t lo = hi > 32 ? hi - 32 : 0;
    for (uint64_t p = hi; p > lo; p--)
        if (bit_of(L, p - 1)) return (int64_t)(p - 1);
    return -1;
}

/* LazyChdPh._decode_block's checks of select block k; 0 if they hold. Every sum and product
 * below is bounded first: a quotient part (a one's position less its rank) above
 * total_length >> rem_r + 1 gives an end past total_length, which the Python decoder refuses too,
 * and refusing it here before the shift keeps the arithmetic inside 64 bits. */
static int check_block(const Lookup *L, uint64_t k, int64_t *last_end) {
    uint64_t first = k * STEP, nb = L->nbuckets;
    uint64_t count = nb - first < STEP ? nb - first : STEP;
    uint64_t p0 = sample(L, k);
    uint64_t p_end = k + 1 < L->samples ? sample(L, k + 1) : L->nbits;
    if (!(p0 < p_end && p_end <= L->nbits)) return -1;
    if (p_end - p0 > count * ((MAX_FIELD_BITS >> L->rem_r) + 2)) return -1;
    int64_t quot_max = (int64_t)(L->total_length >> L->rem_r) + 1;
    int64_t before = -1;
    if (k) {
        before = one_before(L, p0);
        if (before < 0) return -1;
    }
    if (!bit_of(L, p0)) return -1;
    uint64_t ones = 0, last = 0;
    int64_t i0 = (int64_t)(k ? first - 1 : first);
    int64_t prev = 0;
    int64_t j = 0;
    if (k) {
        int64_t quot = before - i0;
        if (quot < 0 || quot > quot_max) return -1;
        prev = (quot << L->rem_r) + (int64_t)rem_of(L, (uint64_t)i0);
        j = 1;
    }
    for (uint64_t p = p0; p < p_end; p++) {
        if (!bit_of(L, p)) continue;
        ones++;
        last = p;
        if (ones > count) return -1;
        int64_t quot = (int64_t)p - i0 - j;
        if (quot < 0 || quot > quot_max) return -1;
        int64_t end = (quot << L->rem_r) + (int64_t)rem_of(L, (uint64_t)(i0 + j));
        int64_t length = end - prev;
        if (length < 0 || length > MAX_FIELD_BITS || end > (int64_t)L->total_length) return -1;
        prev = end;
        j++;
    }
    if (ones != count) return -1;
    if (k + 1 == L->samples && last != L->nbits - 1) return -1;
    *last_end = prev;
    return 0;
}

/* Position of the r-th one at or after bit p (p itself a one: r = 0 gives p). */
static inline uint64_t select_from(const Lookup *L, uint64_t p, unsigned r) {
    for (;;) {
        uint64_t w = bits_at(L, L->bits_vec, p, 56);
        unsigned c = (unsigned)__builtin_popcountll(w);
        if (c > r) {
            while (r--) w &= w - 1;
            return p + (uint64_t)__builtin_ctzll(w);
        }
        r -= c;
        p += 56;
    }
}

/* compressed_seq_query(cs, g), or -1 when g's select block does not check. */
static int64_t displacement(Lookup *L, uint64_t g) {
    uint64_t k = g / STEP;
    if (!(__atomic_load_n(&L->checked[k >> 3], __ATOMIC_RELAXED) & (1u << (k & 7)))) {
        int64_t last_end;
        if (check_block(L, k, &last_end)) return -1;
        __atomic_fetch_or(&L->checked[k >> 3], (uint8_t)(1u << (k & 7)), __ATOMIC_RELAXED);
    }
    uint64_t p0 = sample(L, k);
    unsigned idx = (unsigned)(g % STEP);
    uint64_t pos, prev_pos;
    int64_t prev_end;
    if (idx) {
        prev_pos = select_from(L, p0, idx - 1);
        pos = select_from(L, prev_pos, 1);
    } else {
        pos = p0;
        prev_pos = k ? (uint64_t)one_before(L, p0) : 0;
    }
    if (g == 0)
        prev_end = 0;
    else
        prev_end = (int64_t)((prev_pos - (g - 1)) << L->rem_r) + (int64_t)rem_of(L, g - 1);
    int64_t end = (int64_t)((pos - g) << L->rem_r) + (int64_t)rem_of(L, g);
    unsigned length = (unsigned)(end - prev_end);
    if (!length) return 0;
    return (int64_t)(bits_at(L, L->store_table, (uint64_t)prev_end, length) +
                     ((UINT64_C(1) << length) - 1));
}

static int64_t slot_of(Lookup *L, const uint8_t *key, size_t len) {
    uint32_t h[3];
    jenkins(L->seed, key, len, h);
    int64_t disp = displacement(L, h[0] % L->nbuckets);
    if (disp < 0) return -1;
    uint64_t n = L->n, d = (uint64_t)disp;
    uint64_t f = h[1] % n, hh = h[2] % (n - 1) + 1;
    return (int64_t)((f + hh * (d % n) + d / n) % n);
}

/* Frees the buffers; only with no call running without the GIL (active == 0). */
static void Lookup_release(Lookup *self) {
    self->ready = 0;
    if (self->has_dump) PyBuffer_Release(&self->dump);
    if (self->has_file) PyBuffer_Release(&self->file);
    self->has_dump = self->has_file = 0;
    self->fd = -1;
    PyMem_Free(self->checked);
    self->checked = NULL;
}

/* Stops new calls and waits (without the GIL) until the running ones are done. */
static void Lookup_quiesce(Lookup *self) {
    self->ready = 0;
    while (self->active) {
        Py_BEGIN_ALLOW_THREADS
        sched_yield();
        Py_END_ALLOW_THREADS
    }
}

/* A call that may let go of the GIL starts: 0, or -1 with ValueError when closed. */
static int Lookup_enter(Lookup *self) {
    if (!self->ready) {
        PyErr_SetString(PyExc_ValueError, "released");
        return -1;
    }
    self->active++;
    return 0;
}

static void Lookup_dealloc(Lookup *self) {
    Lookup_release(self); /* no call runs: each holds a reference */
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* "O&" converter: a non-negative int below 2**64 (K would wrap a negative number) */
static int u64_arg(PyObject *obj, void *out) {
    PyObject *idx = PyNumber_Index(obj);
    if (!idx) return 0;
    unsigned long long v = PyLong_AsUnsignedLongLong(idx);
    Py_DECREF(idx);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_SetString(PyExc_ValueError, "a CHD_PH count or offset is negative or too big");
        }
        return 0;
    }
    *(unsigned long long *)out = v;
    return 1;
}

#define U32_MAX_ARG 0xFFFFFFFFull

static int Lookup_init(Lookup *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"dump", "n", "nbuckets", "seed", "rem_r", "total_length", "sel_m",
                            "bits_vec", "select_table", "length_rems", "store_table",
                            "dump_size", "file", "fd", "index_pos", "num_slots", "obj_lo",
                            "obj_hi", NULL};
    unsigned long long n, nbuckets, seed, rem_r, total, sel_m, bv, st, lr, stt, ds;
    unsigned long long ip = 0, ns = 0, lo = 0, hi = 0;
    PyObject *file = Py_None;
    Py_buffer dump;
    int fd = -1;
    Lookup_quiesce(self); /* a second __init__: the calls on the old buffers end first */
    Lookup_release(self);
    if (!PyArg_ParseTupleAndKeywords(
            args, kw, "y*O&O&O&O&O&O&O&O&O&O&O&|OiO&O&O&O&", names, &dump, u64_arg, &n,
            u64_arg, &nbuckets, u64_arg, &seed, u64_arg, &rem_r, u64_arg, &total, u64_arg,
            &sel_m, u64_arg, &bv, u64_arg, &st, u64_arg, &lr, u64_arg, &stt, u64_arg, &ds,
            &file, &fd, u64_arg, &ip, u64_arg, &ns, u64_arg, &lo, u64_arg, &hi))
        return -1;
    /* every bound below is a comparison that cannot wrap: each operand is below 2**34 or
     * is compared with a difference of two checked values */
    uint64_t dlen = (uint64_t)dump.len;
    int ok = n >= 2 && n <= U32_MAX_ARG && nbuckets >= 1 && nbuckets <= U32_MAX_ARG &&
             seed <= U32_MAX_ARG && rem_r <= MAX_FIELD_BITS && total <= U32_MAX_ARG &&
             sel_m <= U32_MAX_ARG && ds <= dlen && bv <= ds && st <= ds && lr <= ds &&
             stt <= ds && lo <= hi && ns <= (UINT64_MAX - ip) / SLOT_SIZE;
    uint64_t samples = (nbuckets + STEP - 1) / STEP, nbits = nbuckets + sel_m;
    /* the select samples and the whole bit vector (its padding to 32 bits too) */
    ok = ok && 4 * samples <= ds - st && 4 * ((nbits + 31) >> 5) <= ds - bv;
    if (!ok) {
        PyBuffer_Release(&dump);
        PyErr_SetString(PyExc_ValueError, "inconsistent CHD_PH layout");
        return -1;
    }
    uint8_t *checked = PyMem_Calloc((samples >> 3) + 1, 1);
    if (!checked) {
        PyBuffer_Release(&dump);
        PyErr_NoMemory();
        return -1;
    }
    if (file != Py_None) {
        if (PyObject_GetBuffer(file, &self->file, PyBUF_SIMPLE) < 0) {
            PyBuffer_Release(&dump);
            PyMem_Free(checked);
            return -1;
        }
        self->has_file = 1;
    }
    self->dump = dump;
    self->has_dump = 1;
    self->checked = checked;
    self->fd = fd;
    self->n = (uint32_t)n;
    self->nbuckets = (uint32_t)nbuckets;
    self->seed = (uint32_t)seed;
    self->rem_r = (uint32_t)rem_r;
    self->samples = (uint32_t)samples;
    self->total_length = total;
    self->nbits = nbits;
    self->bits_vec = bv;
    self->select_table = st;
    self->length_rems = lr;
    self->store_table = stt;
    self->dump_size = ds;
    self->index_pos = ip;
    self->num_slots = ns;
    self->obj_lo = lo;
    self->obj_hi = hi;
    self->spec = SPEC_MAX;
    self->ready = 1;
    return 0;
}

static PyObject *Lookup_slot(Lookup *self, PyObject *arg) {
    Py_buffer key;
    if (!self->ready) {
        PyErr_SetString(PyExc_ValueError, "released");
        return NULL;
    }
    if (PyObject_GetBuffer(arg, &key, PyBUF_SIMPLE) < 0) return NULL;
    int64_t s = slot_of(self, (const uint8_t *)key.buf, (size_t)key.len);
    PyBuffer_Release(&key);
    return PyLong_FromLongLong(s);
}

#define WOULD_BLOCK (-2)

/* One pread of len bytes at pos. nowait: only what the page cache holds, at once (preadv2
 * RWF_NOWAIT), and WOULD_BLOCK unless all len bytes came (not cached, a short file, or a
 * kernel without RWF_NOWAIT): the caller then reads again, blocking, without the GIL. */
static ssize_t pread_once(int fd, uint8_t *buf, size_t len, uint64_t pos, int nowait) {
    ssize_t got;
    if (nowait) {
#ifdef RWF_NOWAIT
        struct iovec v = {buf, len};
        do {
            got = preadv2(fd, &v, 1, (off_t)pos, RWF_NOWAIT);
        } while (got < 0 && errno == EINTR);
        return got >= 0 && (size_t)got == len ? got : WOULD_BLOCK;
#else
        return WOULD_BLOCK;
#endif
    }
    do {
        got = pread(fd, buf, len, (off_t)pos);
    } while (got < 0 && errno == EINTR);
    return got;
}

/* pread exactly len bytes at pos: 0, -1 on failure, or WOULD_BLOCK (nowait, see pread_once) */
static int pread_all(int fd, uint8_t *buf, size_t len, uint64_t pos, int nowait) {
    if (nowait) return len && pread_once(fd, buf, len, pos, 1) == WOULD_BLOCK ? WOULD_BLOCK : 0;
    while (len) {
        ssize_t got = pread_once(fd, buf, len, pos, 0);
        if (got <= 0) return -1;
        buf += got;
        len -= (size_t)got;
        pos += (uint64_t)got;
    }
    return 0;
}

/* The index entry of slot: 0, -1 when it lies outside the index or cannot be read, or
 * WOULD_BLOCK (nowait). */
static int read_entry(Lookup *self, uint64_t slot, uint8_t entry[SLOT_SIZE], int nowait) {
    if (slot >= self->num_slots) return -1;
    uint64_t pos = self->index_pos + slot * SLOT_SIZE; /* no wrap: checked by __init__ */
    if (self->has_file) {
        uint64_t flen = (uint64_t)self->file.len;
        if (pos > flen || SLOT_SIZE > flen - pos) return -1;
        memcpy(entry, (const uint8_t *)self->file.buf + pos, SLOT_SIZE);
        return 0;
    }
    if (self->fd < 0) return -1;
    return pread_all(self->fd, entry, SLOT_SIZE, pos, nowait);
}

/* The value of a live entry at ofs, from the mapping; NULL with no error set: not the simple
 * case (the Python path answers). */
static PyObject *mapped_value(Lookup *self, uint64_t ofs) {
    uint64_t lo = self->obj_lo, hi = self->obj_hi;
    const uint8_t *f = (const uint8_t *)self->file.buf;
    if (ofs < lo || hi < OBJ_HEAD || ofs > hi - OBJ_HEAD || hi > (uint64_t)self->file.len)
        return NULL;
    uint64_t size = be64(f + ofs);
    if (size > hi - ofs - OBJ_HEAD) return NULL;
    return PyBytes_FromStringAndSize((const char *)f + ofs + OBJ_HEAD, (Py_ssize_t)size);
}

/* What the disk part of a pread lookup found. */
typedef struct {
    uint64_t ofs;    /* the object's offset */
    ssize_t got;     /* bytes of head read at ofs (-1: the key is not simply there) */
    uint8_t head[SPEC_MAX];
} Probe;

/* Hash, slot, index entry and the first pread of the object; no Python object is touched.
 * 0, or WOULD_BLOCK (nowait: a read would wait for the disk). */
static int probe_pread(Lookup *self, const uint8_t *k, Probe *pr, int nowait) {
    uint8_t entry[SLOT_SIZE];
    pr->got = -1;
    int64_t slot = slot_of(self, k, KEY_LEN);
    if (slot < 0) return 0;
    int rc = read_entry(self, (uint64_t)slot, entry, nowait);
    if (rc == WOULD_BLOCK) return WOULD_BLOCK;
    if (rc || memcmp(entry, k, KEY_LEN)) return 0;
    uint64_t ofs = be64(entry + ENTRY_OFS), lo = self->obj_lo, hi = self->obj_hi;
    if (ofs < lo || hi < OBJ_HEAD || ofs > hi - OBJ_HEAD) return 0;
    uint64_t spec = __atomic_load_n(&self->spec, __ATOMIC_RELAXED);
    uint64_t want = hi - ofs < spec ? hi - ofs : spec;
    ssize_t got = pread_once(self->fd, pr->head, (size_t)want, ofs, nowait);
    if (got == WOULD_BLOCK) return WOULD_BLOCK;
    pr->ofs = ofs;
    pr->got = got;
    return 0;
}

/* get(key) -> bytes, or None when the Python path must answer (absent, odd, unchecked).
 * With pread, what the page cache holds is read at once with the GIL kept (releasing it costs
 * more than such a read); a read that would wait for the disk runs without the GIL. */
static PyObject *Lookup_get(Lookup *self, PyObject *key) {
    if (!PyBytes_CheckExact(key) || PyBytes_GET_SIZE(key) != KEY_LEN || !self->ready ||
        (!self->has_file && self->fd < 0))
        Py_RETURN_NONE;
    const uint8_t *k = (const uint8_t *)PyBytes_AS_STRING(key);
    if (self->has_file) { /* a small shard, mapped: no system call, the GIL is kept */
        uint8_t entry[SLOT_SIZE];
        int64_t slot = slot_of(self, k, KEY_LEN);
        if (slot < 0 || read_entry(self, (uint64_t)slot, entry, 0) ||
            memcmp(entry, k, KEY_LEN))
            Py_RETURN_NONE;
        PyObject *out = mapped_value(self, be64(entry + ENTRY_OFS));
        if (!out && !PyErr_Occurred()) Py_RETURN_NONE;
        return out;
    }
    /* key is immutable bytes, held by the caller, so it is read without the GIL too */
    Probe pr;
    PyObject *out = NULL;
    int failed = 0;
    self->active++;
    if (probe_pread(self, k, &pr, 1) == WOULD_BLOCK) {
        Py_BEGIN_ALLOW_THREADS
        probe_pread(self, k, &pr, 0);
        Py_END_ALLOW_THREADS
    }
    if (pr.got < OBJ_HEAD) goto done;
    uint64_t ofs = pr.ofs, size = be64(pr.head);
    if (size > self->obj_hi - ofs - OBJ_HEAD) goto done;
    uint64_t spec = size + OBJ_HEAD < SPEC_MIN   ? SPEC_MIN
                    : size + OBJ_HEAD > SPEC_MAX ? SPEC_MAX
                                                 : size + OBJ_HEAD;
    __atomic_store_n(&self->spec, spec, __ATOMIC_RELAXED);
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (!out) goto done;
    uint8_t *dst = (uint8_t *)PyBytes_AS_STRING(out);
    uint64_t have = (uint64_t)pr.got - OBJ_HEAD < size ? (uint64_t)pr.got - OBJ_HEAD : size;
    memcpy(dst, pr.head + OBJ_HEAD, have);
    if (have < size) { /* out is ours alone until returned: filled without the GIL if need be */
        uint64_t pos = ofs + OBJ_HEAD + have;
        failed = pread_all(self->fd, dst + have, size - have, pos, 1);
        if (failed == WOULD_BLOCK) {
            Py_BEGIN_ALLOW_THREADS
            failed = pread_all(self->fd, dst + have, size - have, pos, 0);
            Py_END_ALLOW_THREADS
        }
        if (failed) Py_CLEAR(out);
    }
done:
    self->active--;
    if (!out && !PyErr_Occurred()) Py_RETURN_NONE;
    return out;
}

/* slots_into(keys, out) -> count: slots of the 32-byte keys (a C-contiguous buffer of
 * 32 * m bytes) written to out (a writable buffer of m int64); stops at the first key whose
 * select block does not check and returns how many were done. */
static PyObject *Lookup_slots_into(Lookup *self, PyObject *args) {
    Py_buffer keys, out;
    if (!PyArg_ParseTuple(args, "y*w*", &keys, &out)) return NULL;
    Py_ssize_t m = keys.len / KEY_LEN, i = 0;
    if (keys.len % KEY_LEN || out.len < m * (Py_ssize_t)sizeof(int64_t)) {
        PyBuffer_Release(&keys);
        PyBuffer_Release(&out);
        PyErr_SetString(PyExc_ValueError, "keys must be 32 * m bytes and out m int64");
        return NULL;
    }
    if (Lookup_enter(self) < 0) {
        PyBuffer_Release(&keys);
        PyBuffer_Release(&out);
        return NULL;
    }
    const uint8_t *k = (const uint8_t *)keys.buf;
    int64_t *o = (int64_t *)out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (; i < m; i++) {
        int64_t s = slot_of(self, k + KEY_LEN * i, KEY_LEN);
        if (s < 0) break;
        o[i] = s;
    }
    Py_END_ALLOW_THREADS
    self->active--;
    PyBuffer_Release(&keys);
    PyBuffer_Release(&out);
    return PyLong_FromSsize_t(i);
}

/* The whole check, without the GIL: -1, or the first bad block (samples for the rest). */
static int64_t check_everything(Lookup *self) {
    int64_t last_end = 0;
    for (uint64_t k = 0; k < self->samples; k++) {
        if (check_block(self, k, &last_end)) return (int64_t)k;
        __atomic_fetch_or(&self->checked[k >> 3], (uint8_t)(1u << (k & 7)), __ATOMIC_RELAXED);
    }
    uint64_t p0 = sample(self, 0);
    for (uint64_t p = 0; p < p0; p++)
        if (bit_of(self, p)) return self->samples;
    /* the bit vector's padding to whole 32-bit words holds no one (the Python decoder counts
     * every bit of bits_vec) */
    uint64_t padded = ((self->nbits + 31) >> 5) << 5;
    for (uint64_t p = self->nbits; p < padded; p++)
        if (bit_of(self, p)) return self->samples;
    if (last_end != (int64_t)self->total_length) return self->samples;
    return -1;
}

/* check_all() -> -1 when every select block checks, the first bit vector is where the first
 * sample says, the padding of the bit vector is zero and the values end at total_length; else
 * the number of the first bad block (samples for the global checks). */
static PyObject *Lookup_check_all(Lookup *self, PyObject *Py_UNUSED(ignored)) {
    if (Lookup_enter(self) < 0) return NULL;
    int64_t bad;
    Py_BEGIN_ALLOW_THREADS
    bad = check_everything(self);
    Py_END_ALLOW_THREADS
    self->active--;
    return PyLong_FromLongLong(bad);
}

static PyObject *Lookup_close(Lookup *self, PyObject *Py_UNUSED(ignored)) {
    Lookup_quiesce(self);
    Lookup_release(self);
    Py_RETURN_NONE;
}

static PyMethodDef Lookup_methods[] = {
    {"slot", (PyCFunction)Lookup_slot, METH_O,
     "slot(key) -> cmph_search's slot of key, or -1 when its select block does not check"},
    {"get", (PyCFunction)Lookup_get, METH_O,
     "get(key) -> the value of a present 32-byte key, or None (the Python path answers)"},
    {"slots_into", (PyCFunction)Lookup_slots_into, METH_VARARGS,
     "slots_into(keys, out) -> how many slots of the 32-byte keys were written to out"},
    {"check_all", (PyCFunction)Lookup_check_all, METH_NOARGS,
     "check_all() -> -1 when the whole compressed sequence checks, else a block number"},
    {"close", (PyCFunction)Lookup_close, METH_NOARGS, "release the buffers"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject LookupType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shardkit.formats.swh._native.Lookup",
    .tp_basicsize = sizeof(Lookup),
    .tp_dealloc = (destructor)Lookup_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A CHD_PH function over a cmph dump, with the shard's index and objects",
    .tp_methods = Lookup_methods,
    .tp_init = (initproc)Lookup_init,
    .tp_new = PyType_GenericNew,
};

/* hash32_into(keys, seed, a, b, c): lookup2 of every 32-byte key into three uint32 buffers */
static PyObject *hash32_into(PyObject *mod, PyObject *args) {
    Py_buffer keys, a, b, c;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "y*Kw*w*w*", &keys, &seed, &a, &b, &c)) return NULL;
    Py_ssize_t m = keys.len / KEY_LEN;
    PyObject *ret = NULL;
    if (keys.len % KEY_LEN || seed > 0xFFFFFFFFull || a.len < 4 * m || b.len < 4 * m ||
        c.len < 4 * m) {
        PyErr_SetString(PyExc_ValueError, "keys must be 32 * m bytes, outputs m uint32");
        goto done;
    }
    const uint8_t *k = (const uint8_t *)keys.buf;
    uint32_t *pa = a.buf, *pb = b.buf, *pc = c.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < m; i++) {
        uint32_t h[3];
        jenkins((uint32_t)seed, k + KEY_LEN * i, KEY_LEN, h);
        pa[i] = h[0];
        pb[i] = h[1];
        pc[i] = h[2];
    }
    Py_END_ALLOW_THREADS
    ret = PyLong_FromSsize_t(m);
done:
    PyBuffer_Release(&keys);
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    PyBuffer_Release(&c);
    return ret;
}

/* pairs(keys, rows, data, firsts, ends) -> [(keys[rows[i]], data[firsts[i]:ends[i]])...]:
 * keys holds rows of 32 bytes, rows, firsts and ends m int64 each (every range inside data,
 * every row inside keys). */
static PyObject *pairs(PyObject *mod, PyObject *args) {
    Py_buffer keys, rows, data, firsts, ends;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*", &keys, &rows, &data, &firsts, &ends)) return NULL;
    Py_ssize_t nkeys = keys.len / KEY_LEN, m = rows.len / 8;
    PyObject *list = NULL;
    if (keys.len % KEY_LEN || rows.len % 8 || firsts.len != m * 8 || ends.len != m * 8) {
        PyErr_SetString(PyExc_ValueError, "keys must be rows of 32 bytes, rows, firsts and ends "
                        "m int64 each");
        goto done;
    }
    const int64_t *f = firsts.buf, *e = ends.buf, *r = rows.buf;
    const char *k = keys.buf, *d = data.buf;
    for (Py_ssize_t i = 0; i < m; i++) {
        if (f[i] < 0 || f[i] > e[i] || e[i] > data.len || r[i] < 0 || r[i] >= nkeys) {
            PyErr_SetString(PyExc_ValueError, "a range lies outside the data");
            goto done;
        }
    }
    list = PyList_New(m);
    if (!list) goto done;
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *key = PyBytes_FromStringAndSize(k + KEY_LEN * r[i], KEY_LEN);
        PyObject *value = key ? PyBytes_FromStringAndSize(d + f[i], e[i] - f[i]) : NULL;
        PyObject *t = value ? PyTuple_New(2) : NULL;
        if (!t) {
            Py_XDECREF(key);
            Py_XDECREF(value);
            Py_CLEAR(list);
            goto done;
        }
        PyTuple_SET_ITEM(t, 0, key);
        PyTuple_SET_ITEM(t, 1, value);
        PyObject_GC_UnTrack(t); /* two bytes: never part of a cycle (as CPython's own
                                   _PyTuple_MaybeUntrack decides) */
        PyList_SET_ITEM(list, i, t);
    }
done:
    PyBuffer_Release(&keys);
    PyBuffer_Release(&rows);
    PyBuffer_Release(&data);
    PyBuffer_Release(&firsts);
    PyBuffer_Release(&ends);
    return list;
}

/* Whether a bucket whose size keys have (f, h) = (bf[j], bh[j]) fits at displacement d: every
 * bin (f + h * (d % n) + d / n) % n free and the bins distinct; if so they are taken. */
static inline int try_place(const uint32_t *bf, const uint32_t *bh, uint32_t size, uint64_t n,
                            uint64_t p0, uint64_t p1, uint8_t *used, uint64_t *pos) {
    for (uint32_t j = 0; j < size; j++) {
        uint64_t p = ((uint64_t)bf[j] + (uint64_t)bh[j] * p0 + p1) % n;
        if (used[p >> 3] & (1u << (p & 7))) return 0;
        for (uint32_t q = 0; q < j; q++)
            if (pos[q] == p) return 0;
        pos[j] = p;
    }
    for (uint32_t j = 0; j < size; j++) used[pos[j] >> 3] |= (uint8_t)(1u << (pos[j] & 7));
    return 1;
}

/* place(f, h, g, n, nbuckets, max_probes, disp) -> True when placed, False when a bucket
 * found no displacement below max_probes, or (i, j): keys i and j share their bucket and
 * (f, h) (equal keys, or a new seed is needed, as chd_ph_mapping decides).
 *
 * cmph's place_buckets2 (chd_ph.c, the search chd_ph_new runs): buckets by size, largest
 * first; all buckets of one size try displacement 0, then the ones still waiting try 1, 2...,
 * in bucket order, each taking its bins at once. The pure-Python twin
 * (shardkit.hashing.cmph_build._place) gives the same displacements.
 * f, h: uint32 per key (h already c % (n - 1) + 1), g: int64 bucket per key, disp: int64 per
 * bucket (written). */
static PyObject *place(PyObject *mod, PyObject *args) {
    Py_buffer fb, hb, gb, db;
    unsigned long long n, nbuckets, max_probes;
    if (!PyArg_ParseTuple(args, "y*y*y*O&O&O&w*", &fb, &hb, &gb, u64_arg, &n, u64_arg,
                          &nbuckets, u64_arg, &max_probes, &db))
        return NULL;
    PyObject *ret = NULL;
    Py_ssize_t m = fb.len / 4;
    uint32_t *count = NULL, *first = NULL, *items = NULL, *order = NULL, *by = NULL;
    uint8_t *used = NULL;
    uint64_t *pos = NULL;
    uint32_t *wf = NULL, *wh = NULL;
    if (hb.len != fb.len || fb.len % 4 || gb.len != 8 * m || n < 2 || n > U32_MAX_ARG ||
        nbuckets < 1 || nbuckets > U32_MAX_ARG || db.len != (Py_ssize_t)(8 * nbuckets) ||
        (unsigned long long)m > U32_MAX_ARG) {
        PyErr_SetString(PyExc_ValueError, "place: inconsistent arguments");
        goto done;
    }
    const uint32_t *f = fb.buf, *h = hb.buf;
    const int64_t *g = gb.buf;
    int64_t *disp = db.buf;
    count = PyMem_Calloc(nbuckets + 1, 4);
    first = PyMem_Calloc(nbuckets + 1, 4);
    items = PyMem_Malloc(((size_t)m + 1) * 4);
    order = PyMem_Malloc((nbuckets + 1) * 4);
    used = PyMem_Calloc((n >> 3) + 1, 1);
    if (!count || !first || !items || !order || !used) {
        PyErr_NoMemory();
        goto done;
    }
    int ok = 1;
    Py_ssize_t dup_a = -1, dup_b = -1;
    uint32_t biggest = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        if (g[i] < 0 || (unsigned long long)g[i] >= nbuckets) {
            PyErr_SetString(PyExc_ValueError, "place: a bucket number is out of range");
            goto done;
        }
        if (++count[g[i]] > biggest) biggest = count[g[i]];
    }
    by = PyMem_Calloc((size_t)biggest + 2, 4);
    if (!by) {
        PyErr_NoMemory();
        goto done;
    }
    /* the (f, h) copies hold one size's keys at a time: the most keys of one size (about a
     * fifth of all, sizes being Poisson(4)), not all of them */
    for (uint64_t b = 0; b < nbuckets; b++) by[count[b]]++;
    uint64_t widest = 0;
    for (uint64_t sz = 1; sz <= biggest; sz++)
        if (sz * by[sz] > widest) widest = sz * by[sz];
    pos = PyMem_Malloc(((size_t)biggest + 1) * 8);
    wf = PyMem_Malloc(((size_t)widest + 1) * 4);
    wh = PyMem_Malloc(((size_t)widest + 1) * 4);
    if (!pos || !wf || !wh) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    uint64_t acc = 0;
    for (uint64_t b = 0; b < nbuckets; b++) { first[b] = (uint32_t)acc; acc += count[b]; }
    for (Py_ssize_t i = 0; i < m; i++) items[first[g[i]]++] = (uint32_t)i;
    for (uint64_t b = 0; b < nbuckets; b++) first[b] -= count[b];
    /* buckets by size, largest first, in bucket order within a size (chd_ph_ordering);
     * by[s] (the number of buckets of size s) ends as the end of size s's run in order */
    uint64_t at = 0;
    for (int64_t s = biggest; s >= 0; s--) { uint32_t c = by[s]; by[s] = (uint32_t)at; at += c; }
    for (uint64_t b = 0; b < nbuckets; b++) order[by[count[b]]++] = (uint32_t)b;
    /* two keys of one bucket with equal (f, h) collide at every displacement */
    for (uint64_t b = 0; b < nbuckets && dup_a < 0; b++) {
        const uint32_t *it = items + first[b];
        for (uint32_t j = 1; j < count[b] && dup_a < 0; j++)
            for (uint32_t q = 0; q < j; q++)
                if (f[it[j]] == f[it[q]] && h[it[j]] == h[it[q]]) {
                    dup_a = it[q] < it[j] ? it[q] : it[j];
                    dup_b = it[q] < it[j] ? it[j] : it[q];
                    ok = 2;
                    break;
                }
    }
    for (uint64_t b = 0; b < nbuckets; b++) disp[b] = 0;
    /* the run of each size, largest first: order[lo, hi); the waiting buckets' (f, h) are
     * copied side by side (wf, wh: size per bucket), so that each displacement's sweep reads
     * them in sequence, and compacted as buckets are placed */
    uint64_t lo = 0;
    for (int64_t s = biggest; ok == 1 && s > 0; s--) {
        uint64_t hi = by[s];
        uint64_t waiting = hi - lo;
        uint32_t *list = order + lo;
        for (uint64_t j = 0; j < waiting; j++) {
            const uint32_t *it = items + first[list[j]];
            for (int64_t q = 0; q < s; q++) {
                wf[j * s + q] = f[it[q]];
                wh[j * s + q] = h[it[q]];
            }
        }
        for (uint64_t d = 0; waiting; d++) {
            if (d >= max_probes) { ok = 0; break; }
            uint64_t kept = 0, p0 = d % n, p1 = d / n;
            for (uint64_t j = 0; j < waiting; j++) {
                uint32_t *bf = wf + j * s, *bh = wh + j * s;
                if (try_place(bf, bh, (uint32_t)s, n, p0, p1, used, pos)) {
                    disp[list[j]] = (int64_t)d;
                    continue;
                }
                if (kept != j) { /* still waiting, the order kept */
                    list[kept] = list[j];
                    memcpy(wf + kept * s, bf, 4 * (size_t)s);
                    memcpy(wh + kept * s, bh, 4 * (size_t)s);
                }
                kept++;
            }
            waiting = kept;
        }
        lo = hi;
    }
    Py_END_ALLOW_THREADS
    if (ok == 2) ret = Py_BuildValue("(nn)", dup_a, dup_b);
    else ret = PyBool_FromLong(ok);
done:
    PyMem_Free(count);
    PyMem_Free(first);
    PyMem_Free(items);
    PyMem_Free(order);
    PyMem_Free(used);
    PyMem_Free(by);
    PyMem_Free(pos);
    PyMem_Free(wf);
    PyMem_Free(wh);
    PyBuffer_Release(&fb);
    PyBuffer_Release(&hb);
    PyBuffer_Release(&gb);
    PyBuffer_Release(&db);
    return ret;
}

static PyObject *hash_vector(PyObject *mod, PyObject *args) {
    Py_buffer key;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "Ky*", &seed, &key)) return NULL;
    uint32_t h[3];
    jenkins((uint32_t)seed, key.buf, (size_t)key.len, h);
    PyBuffer_Release(&key);
    return Py_BuildValue("(kkk)", (unsigned long)h[0], (unsigned long)h[1],
                         (unsigned long)h[2]);
}

static PyMethodDef module_methods[] = {
    {"hash32_into", hash32_into, METH_VARARGS,
     "hash32_into(keys, seed, a, b, c): lookup2 of 32-byte keys into uint32 buffers"},
    {"place", place, METH_VARARGS,
     "place(f, h, g, n, nbuckets, max_probes, disp) -> True, False or (i, j) of equal (g, f, h)"},
    {"pairs", pairs, METH_VARARGS,
     "pairs(keys, rows, data, firsts, ends) -> [(keys[row], data[first:end])...]"},
    {"hash_vector", hash_vector, METH_VARARGS,
     "hash_vector(seed, key) -> cmph's three Jenkins words"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native",
    "C hot path of SWH lookups (optional; the Python path gives the same answers)", -1,
    module_methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    if (PyType_Ready(&LookupType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&LookupType);
    if (PyModule_AddObject(m, "Lookup", (PyObject *)&LookupType) < 0) {
        Py_DECREF(&LookupType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
