/* The evaluation of an FMPH-GO function (the ph crate's fmph::GOFunction), in C.
 *
 * It is an optional accelerator of shardkit.hashing.fmph: GOFunction._get_py is its pure-Python
 * twin and gives the same answer for every key and every function that GOFunction.parse
 * accepts. The layout was checked by GOFunction.parse before an Evaluator is made, and the
 * constructor checks again that every region is as long as the level sizes say, so the
 * lookups below never read outside the buffers. The rank directory (ones before each 64-bit
 * word) is built here, from the array.
 *
 * Per level l (G groups, B groups before it): h = SipHash-1-3 with the zero key of
 * u64le(l) || u64le(len) || key; group g = B + (h * G) >> 64; its 4-bit seed s; the bit
 * 16 * g + (mix32(low32(h) ^ s) & 15); if set, the value is its rank (ones before it).
 *
 * It also has the two hot loops of a build (hash_rows, build_level), whose twins are
 * fmph._np_siphash13 and fmph._build_level; fmph.build gives the same bytes with either.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_bytes.h" /* le64 */

static inline uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

#define SIPROUND                                                   \
    do {                                                           \
        v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);  \
        v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;                     \
        v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;                     \
        v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);  \
    } while (0)

/* SipHash-1-3, zero key, of u64le(seed) || u64le(len) || key (std's DefaultHasher). */
static uint64_t siphash13(uint64_t seed, const uint8_t *key, size_t len) {
    uint64_t v0 = 0x736f6d6570736575ULL, v1 = 0x646f72616e646f6dULL;
    uint64_t v2 = 0x6c7967656e657261ULL, v3 = 0x7465646279746573ULL;
    uint64_t m = seed;
    v3 ^= m; SIPROUND; v0 ^= m;
    m = (uint64_t)len;
    v3 ^= m; SIPROUND; v0 ^= m;
    size_t words = len >> 3;
    for (size_t i = 0; i < words; i++) {
        m = le64(key + 8 * i);
        v3 ^= m; SIPROUND; v0 ^= m;
    }
    uint64_t b = ((uint64_t)((16 + len) & 0xff)) << 56;
    const uint8_t *tail = key + 8 * words;
    for (size_t j = 0; j < (len & 7); j++) b |= ((uint64_t)tail[j]) << (8 * j);
    v3 ^= b; SIPROUND; v0 ^= b;
    v2 ^= 0xff;
    SIPROUND; SIPROUND; SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

static inline uint32_t mix32(uint32_t x) {
    x = (x ^ (x >> 16)) * 0x21f0aaadu;
    x = (x ^ (x >> 15)) * 0xd35a2d97u;
    return x ^ (x >> 15);
}

typedef struct {
    PyObject_HEAD
    PyObject *array_obj, *seeds_obj;   /* bytes, kept alive */
    const uint8_t *array, *seeds;
    uint64_t *levels;                  /* groups per level */
    Py_ssize_t nlevels;
    uint64_t *rank;                    /* ones before each word; words + 1 entries */
    uint64_t words;                    /* 64-bit words of the array the levels use */
} Evaluator;

/* The value of key, or -1 when no level claims it. */
static int64_t evaluate(const Evaluator *e, const uint8_t *key, size_t len) {
    uint64_t before = 0;
    for (Py_ssize_t level = 0; level < e->nlevels; level++) {
        uint64_t groups = e->levels[level];
        uint64_t h = siphash13((uint64_t)level, key, len);
        uint64_t group = before + (uint64_t)(((unsigned __int128)h * groups) >> 64);
        uint32_t seed = (e->seeds[group >> 1] >> ((group & 1) << 2)) & 0xf;
        uint64_t bit = (group << 4) + (mix32((uint32_t)h ^ seed) & 0xf);
        uint64_t word = le64(e->array + 8 * (bit >> 6));
        unsigned shift = (unsigned)(bit & 63);
        if ((word >> shift) & 1) {
            uint64_t below = word & ((1ULL << shift) - 1);
            return (int64_t)(e->rank[bit >> 6] + (uint64_t)__builtin_popcountll(below));
        }
        before += groups;
    }
    return -1;
}

static void Evaluator_dealloc(Evaluator *self) {
    Py_XDECREF(self->array_obj);
    Py_XDECREF(self->seeds_obj);
    PyMem_Free(self->levels);
    PyMem_Free(self->rank);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Evaluator_init(Evaluator *self, PyObject *args, PyObject *kwds) {
    PyObject *array, *seeds;
    const char *levels;
    Py_ssize_t levels_len;
    static char *kwlist[] = {"array", "seeds", "levels", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "SSy#", kwlist, &array, &seeds, &levels,
                                     &levels_len))
        return -1;
    if (levels_len % 8) {
        PyErr_SetString(PyExc_ValueError, "levels is an array of u64");
        return -1;
    }
    Py_ssize_t nlevels = levels_len / 8;
    uint64_t *lv = PyMem_Malloc(levels_len ? (size_t)levels_len : 1);
    if (!lv) { PyErr_NoMemory(); return -1; }
    uint64_t total = 0;
    for (Py_ssize_t i = 0; i < nlevels; i++) {
        lv[i] = le64((const uint8_t *)levels + 8 * i);
        if (lv[i] == 0 || lv[i] > ((uint64_t)1 << 58) || total + lv[i] > ((uint64_t)1 << 58)) {
            PyMem_Free(lv);
            PyErr_SetString(PyExc_ValueError, "a level size is 0 or too large");
            return -1;
        }
        total += lv[i];
    }
    uint64_t words = (total * 16 + 63) / 64, seed_bytes = (total * 4 + 63) / 64 * 8;
    if ((uint64_t)PyBytes_GET_SIZE(array) < words * 8 ||
        (uint64_t)PyBytes_GET_SIZE(seeds) < seed_bytes) {
        PyMem_Free(lv);
        PyErr_SetString(PyExc_ValueError, "array or seeds shorter than the levels need");
        return -1;
    }
    uint64_t *rk = PyMem_Malloc((size_t)(words + 1) * 8);
    if (!rk) { PyMem_Free(lv); PyErr_NoMemory(); return -1; }
    const uint8_t *a = (const uint8_t *)PyBytes_AS_STRING(array);
    rk[0] = 0;
    for (uint64_t i = 0; i < words; i++)
        rk[i + 1] = rk[i] + (uint64_t)__builtin_popcountll(le64(a + 8 * i));
    Py_XDECREF(self->array_obj);
    Py_XDECREF(self->seeds_obj);
    PyMem_Free(self->levels);
    PyMem_Free(self->rank);
    Py_INCREF(array);
    Py_INCREF(seeds);
    self->array_obj = array;
    self->seeds_obj = seeds;
    self->array = a;
    self->seeds = (const uint8_t *)PyBytes_AS_STRING(seeds);
    self->levels = lv;
    self->nlevels = nlevels;
    self->rank = rk;
    self->words = words;
    return 0;
}

/* ones(): the number of set bits of the array (the number of keys). */
static PyObject *Evaluator_ones(Evaluator *self, PyObject *unused) {
    (void)unused;
    if (!self->levels) { PyErr_SetString(PyExc_RuntimeError, "Evaluator not initialised"); return NULL; }
    return PyLong_FromUnsignedLongLong(self->rank[self->words]);
}

static PyObject *result(int64_t v) {
    if (v < 0) Py_RETURN_NONE;
    return PyLong_FromLongLong(v);
}

static PyObject *Evaluator_get(Evaluator *self, PyObject *key) {
    if (!self->levels) { PyErr_SetString(PyExc_RuntimeError, "Evaluator not initialised"); return NULL; }
    if (PyBytes_Check(key))
        return result(evaluate(self, (const uint8_t *)PyBytes_AS_STRING(key),
                               (size_t)PyBytes_GET_SIZE(key)));
    Py_buffer view;
    if (PyObject_GetBuffer(key, &view, PyBUF_SIMPLE) < 0) return NULL;
    int64_t v = evaluate(self, (const uint8_t *)view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return result(v);
}

/* get_many(keys): a list of get(key) for a sequence of bytes-like keys. */
static PyObject *Evaluator_get_many(Evaluator *self, PyObject *keys) {
    if (!self->levels) { PyErr_SetString(PyExc_RuntimeError, "Evaluator not initialised"); return NULL; }
    PyObject *seq = PySequence_Fast(keys, "keys must be a sequence");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = PyList_New(n);
    if (!out) { Py_DECREF(seq); return NULL; }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = Evaluator_get(self, items[i]);
        if (!v) { Py_DECREF(out); Py_DECREF(seq); return NULL; }
        PyList_SET_ITEM(out, i, v);
    }
    Py_DECREF(seq);
    return out;
}

static PyMethodDef Evaluator_methods[] = {
    {"get", (PyCFunction)Evaluator_get, METH_O, "The key's value, or None."},
    {"get_many", (PyCFunction)Evaluator_get_many, METH_O, "get() of every key, as a list."},
    {"ones", (PyCFunction)Evaluator_ones, METH_NOARGS, "The number of keys (set bits)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject EvaluatorType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shardkit.hashing._fmph.Evaluator",
    .tp_basicsize = sizeof(Evaluator),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Evaluator(array, seeds, levels): FMPH-GO lookups over a parsed function.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Evaluator_init,
    .tp_dealloc = (destructor)Evaluator_dealloc,
    .tp_methods = Evaluator_methods,
};

static PyObject *py_siphash13(PyObject *mod, PyObject *args) {
    unsigned long long seed;
    Py_buffer key;
    (void)mod;
    if (!PyArg_ParseTuple(args, "Ky*", &seed, &key)) return NULL;
    uint64_t h = siphash13(seed, (const uint8_t *)key.buf, (size_t)key.len);
    PyBuffer_Release(&key);
    return PyLong_FromUnsignedLongLong(h);
}

/* hash_rows(seed, rows, key_len, out): out[i] = siphash13(seed, row i) for the len(out) / 8
 * keys of key_len bytes each in the contiguous buffer rows; out is a writable buffer of u64. */
static PyObject *py_hash_rows(PyObject *mod, PyObject *args) {
    unsigned long long seed;
    Py_ssize_t key_len;
    Py_buffer rows, out;
    (void)mod;
    if (!PyArg_ParseTuple(args, "Ky*nw*", &seed, &rows, &key_len, &out)) return NULL;
    PyObject *ret = NULL;
    Py_ssize_t n = out.len / 8;  /* one u64 a key: the count, even for keys of 0 bytes */
    if (key_len < 0 || out.len % 8 || (key_len && n > PY_SSIZE_T_MAX / key_len) ||
        rows.len != n * key_len) {
        PyErr_SetString(PyExc_ValueError, "rows is not len(out) / 8 keys of key_len bytes");
        goto done;
    }
    const uint8_t *r = (const uint8_t *)rows.buf;
    uint8_t *o = (uint8_t *)out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t h = siphash13(seed, r + i * key_len, (size_t)key_len);
        memcpy(o + 8 * i, &h, 8);
    }
    Py_END_ALLOW_THREADS
    ret = PyLong_FromSsize_t(n);
done:
    PyBuffer_Release(&rows);
    PyBuffer_Release(&out);
    return ret;
}

/* build_level(hashes, groups, bits, seeds, key_bits, placed): one level of the construction
 * (GOBuilder::build_levels with relative level size 100) for the u64 hashes of its keys.
 * For every seed 0..15 each key sets bit 16 * group + (mix32(low32(h) ^ seed) & 15) and bits
 * hit twice are cleared; each group keeps the seed whose bits have the most ones (the first on
 * a tie). Writes the level's bits (groups * 2 bytes, little-endian bit order), the seed of each
 * group (one byte each), each key's bit under its group's seed (u64) and whether the key is
 * placed (one byte, 0 or 1). Returns the number of keys placed. */
static PyObject *py_build_level(PyObject *mod, PyObject *args) {
    Py_buffer hb, bits, seeds, key_bits, placed;
    unsigned long long groups;
    (void)mod;
    if (!PyArg_ParseTuple(args, "y*Kw*w*w*w*", &hb, &groups, &bits, &seeds, &key_bits, &placed))
        return NULL;
    PyObject *ret = NULL;
    uint64_t *res = NULL, *col = NULL, *best = NULL;
    uint8_t *best_count = NULL;
    Py_ssize_t n = hb.len / 8;
    if (hb.len % 8 || groups == 0 || groups % 4 || groups > ((uint64_t)1 << 40) ||
        (uint64_t)bits.len < groups * 2 || (uint64_t)seeds.len < groups ||
        key_bits.len < n * 8 || placed.len < n) {
        PyErr_SetString(PyExc_ValueError, "build_level: buffer sizes do not match");
        goto done;
    }
    size_t words = (size_t)(groups / 4);
    res = PyMem_Calloc(words, 8);
    col = PyMem_Calloc(words, 8);
    best = PyMem_Calloc(words, 8);
    best_count = PyMem_Calloc((size_t)groups, 1);
    if (!res || !col || !best || !best_count) { PyErr_NoMemory(); goto done; }
    const uint8_t *hp = (const uint8_t *)hb.buf;
    uint8_t *sd = (uint8_t *)seeds.buf;
    Py_ssize_t count = 0;
    Py_BEGIN_ALLOW_THREADS
    memset(sd, 0, (size_t)groups);
    for (uint32_t seed = 0; seed < 16; seed++) {
        memset(res, 0, words * 8);
        memset(col, 0, words * 8);
        for (Py_ssize_t i = 0; i < n; i++) {
            uint64_t h;
            memcpy(&h, hp + 8 * i, 8);
            uint64_t group = (uint64_t)(((unsigned __int128)h * groups) >> 64);
            uint64_t bit = (group << 4) + (mix32((uint32_t)h ^ seed) & 0xf);
            uint64_t mask = 1ULL << (bit & 63);
            col[bit >> 6] |= res[bit >> 6] & mask;
            res[bit >> 6] |= mask;
        }
        for (size_t w = 0; w < words; w++) res[w] &= ~col[w];
        if (seed == 0) {
            memcpy(best, res, words * 8);
            for (uint64_t g = 0; g < groups; g++)
                best_count[g] = (uint8_t)__builtin_popcountll((res[g >> 2] >> ((g & 3) << 4)) & 0xffff);
            continue;
        }
        for (uint64_t g = 0; g < groups; g++) {
            unsigned shift = (unsigned)((g & 3) << 4);
            uint64_t chunk = (res[g >> 2] >> shift) & 0xffff;
            uint8_t c = (uint8_t)__builtin_popcountll(chunk);
            if (c > best_count[g]) {
                best_count[g] = c;
                sd[g] = (uint8_t)seed;
                best[g >> 2] = (best[g >> 2] & ~(0xffffULL << shift)) | (chunk << shift);
            }
        }
    }
    uint8_t *kb = (uint8_t *)key_bits.buf, *pl = (uint8_t *)placed.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t h;
        memcpy(&h, hp + 8 * i, 8);
        uint64_t group = (uint64_t)(((unsigned __int128)h * groups) >> 64);
        uint64_t bit = (group << 4) + (mix32((uint32_t)h ^ sd[group]) & 0xf);
        memcpy(kb + 8 * i, &bit, 8);
        pl[i] = (uint8_t)((best[bit >> 6] >> (bit & 63)) & 1);
        count += pl[i];
    }
    uint8_t *bo = (uint8_t *)bits.buf;
    for (size_t w = 0; w < words; w++)
        for (int j = 0; j < 8; j++) bo[8 * w + j] = (uint8_t)(best[w] >> (8 * j));
    Py_END_ALLOW_THREADS
    ret = PyLong_FromSsize_t(count);
done:
    PyMem_Free(res);
    PyMem_Free(col);
    PyMem_Free(best);
    PyMem_Free(best_count);
    PyBuffer_Release(&hb);
    PyBuffer_Release(&bits);
    PyBuffer_Release(&seeds);
    PyBuffer_Release(&key_bits);
    PyBuffer_Release(&placed);
    return ret;
}

static PyMethodDef module_methods[] = {
    {"siphash13", py_siphash13, METH_VARARGS, "siphash13(seed, key): the crate's hash_one."},
    {"hash_rows", py_hash_rows, METH_VARARGS, "hash_rows(seed, rows, key_len, out): hash each key."},
    {"build_level", py_build_level, METH_VARARGS,
     "build_level(hashes, groups, bits, seeds, key_bits, placed): one level of a build."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fmph", "C evaluation of FMPH-GO functions.", -1, module_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fmph(void) {
    if (PyType_Ready(&EvaluatorType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&EvaluatorType);
    if (PyModule_AddObject(m, "Evaluator", (PyObject *)&EvaluatorType) < 0) {
        Py_DECREF(&EvaluatorType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
