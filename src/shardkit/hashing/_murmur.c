/* MurmurHash3_x86_128 of many uint64 keys, in C.
 *
 * An optional accelerator of shardkit.hashing.murmur.hash_uint64_array: its numpy twin
 * (_hash_uint64_numpy) and mmh3.hash64, one key at a time, give the same answers for every
 * key (see the tests).
 *
 * murmur_u64(src, dst): dst[i] = the low 64 bits of MurmurHash3_x86_128 (seed 0) of the 8
 *   little-endian bytes src[i] (uint64 arrays of one length). An 8-byte input is one tail of
 *   8 bytes: no 16-byte block is mixed.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_bytes.h" /* le64, put_le64 */

static inline uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

static inline uint32_t fmix32(uint32_t h) {
    h ^= h >> 16;
    h *= 0x85ebca6bU;
    h ^= h >> 13;
    h *= 0xc2b2ae35U;
    h ^= h >> 16;
    return h;
}

static inline uint64_t murmur_low64(uint64_t key) {
    uint32_t k1 = (uint32_t)key, k2 = (uint32_t)(key >> 32);
    const uint32_t c1 = 0x239b961bU, c2 = 0xab0e9789U, c3 = 0x38b34ae5U;
    k2 *= c2; k2 = rotl32(k2, 16); k2 *= c3;
    k1 *= c1; k1 = rotl32(k1, 15); k1 *= c2;
    uint32_t h1 = k1 ^ 8U, h2 = k2 ^ 8U, h3 = 8U, h4 = 8U;
    h1 += h2; h1 += h3; h1 += h4;
    h2 += h1; h3 += h1; h4 += h1;
    h1 = fmix32(h1); h2 = fmix32(h2); h3 = fmix32(h3); h4 = fmix32(h4);
    h1 += h2; h1 += h3; h1 += h4;
    h2 += h1;
    return (uint64_t)h1 | ((uint64_t)h2 << 32);
}

static PyObject *murmur_u64(PyObject *self, PyObject *args) {
    Py_buffer src, dst;
    if (!PyArg_ParseTuple(args, "y*w*", &src, &dst)) return NULL;
    if (src.len % 8 || dst.len != src.len) {
        PyBuffer_Release(&src);
        PyBuffer_Release(&dst);
        PyErr_SetString(PyExc_ValueError, "murmur_u64: buffers of 8-byte keys, equal sizes");
        return NULL;
    }
    const uint8_t *in = (const uint8_t *)src.buf;
    uint8_t *out = (uint8_t *)dst.buf;
    Py_ssize_t n = src.len / 8;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        put_le64(out + 8 * i, murmur_low64(le64(in + 8 * i)));
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"murmur_u64", murmur_u64, METH_VARARGS,
     "murmur_u64(src, dst): low 64 bits of MurmurHash3_x86_128 (seed 0) of each uint64."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_murmur", NULL, -1, methods};

PyMODINIT_FUNC PyInit__murmur(void) { return PyModule_Create(&module); }
