/* The array loops of Neuroglancer annotation verify, in C.
 *
 * An optional accelerator: each function has a numpy twin in
 * shardkit.formats.neuroglancer.annotation_spill that gives the same answers for every input
 * (see the tests), and each checks the sizes of its buffers before reading them.
 *
 * keyed_rows(src, width, keys, dst): dst[i] = splitmix64's finaliser of
 *   width * keys[-1] + sum_j word_j * keys[j] (modulo 2**64), where word_j is the j-th 8-byte
 *   little-endian word of row i (src is n rows of width bytes, back to back; a last partial
 *   word is zero-padded). Twin: annotation_spill._hash_rows_numpy.
 * multiset_sum(key, muls, cols): the sum (modulo 2**64) over rows i of splitmix64's finaliser
 *   of key + sum_j cols[j][i] * muls[j] (1 to 4 uint64 columns of one length). Twin:
 *   annotation_spill.MultisetHash._sum.
 * copy_spans(src, starts, lengths, dst): the spans src[starts[i] : starts[i] + lengths[i]]
 *   (uint64 arrays), back to back into dst, which they must fill exactly. Twin:
 *   annotation_spill._copy_spans_numpy.
 * minishard_index(raw, base, ids, starts, ends): a raw minishard index (3 x n little-endian
 *   uint64: id deltas, offset deltas, sizes) into its ids, starts and ends (running sums,
 *   modulo 2**64); returns 0, 1 when a running sum wraps, 2 when an offset (delta plus size,
 *   or the last end plus base) wraps. Twin: decode._decode_minishard_numpy.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_bytes.h" /* le64, put_le64 */

static inline uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static PyObject *keyed_rows(PyObject *self, PyObject *args) {
    Py_buffer src, keys, dst;
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "y*ny*w*", &src, &width, &keys, &dst)) return NULL;
    Py_ssize_t words = width > 0 ? (width + 7) / 8 : 0;
    int ok = width > 0 && src.len % width == 0 && keys.len % 8 == 0
             && keys.len / 8 >= words + 1 && dst.len == 8 * (src.len / width);
    if (!ok) {
        PyBuffer_Release(&src);
        PyBuffer_Release(&keys);
        PyBuffer_Release(&dst);
        PyErr_SetString(PyExc_ValueError, "keyed_rows: buffer sizes do not agree");
        return NULL;
    }
    const uint8_t *in = (const uint8_t *)src.buf;
    const uint8_t *kb = (const uint8_t *)keys.buf;
    uint8_t *out = (uint8_t *)dst.buf;
    Py_ssize_t n = src.len / width, full = width / 8, rest = width % 8;
    Py_ssize_t nkeys = keys.len / 8;
    Py_BEGIN_ALLOW_THREADS
    uint64_t start = (uint64_t)width * le64(kb + 8 * (nkeys - 1));
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint8_t *row = in + i * width;
        uint64_t h = start;
        for (Py_ssize_t j = 0; j < full; j++) h += le64(row + 8 * j) * le64(kb + 8 * j);
        if (rest) {
            uint8_t tail[8] = {0};
            memcpy(tail, row + 8 * full, (size_t)rest);
            h += le64(tail) * le64(kb + 8 * full);
        }
        put_le64(out + 8 * i, mix64(h));
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&src);
    PyBuffer_Release(&keys);
    PyBuffer_Release(&dst);
    Py_RETURN_NONE;
}

static PyObject *multiset_sum(PyObject *self, PyObject *args) {
    unsigned long long key;
    Py_buffer muls;
    PyObject *cols;
    if (!PyArg_ParseTuple(args, "Ky*O!", &key, &muls, &PyTuple_Type, &cols)) return NULL;
    Py_ssize_t ncols = PyTuple_GET_SIZE(cols);
    if (ncols < 1 || ncols > 4 || muls.len < 8 * ncols) {
        PyBuffer_Release(&muls);
        PyErr_SetString(PyExc_ValueError, "multiset_sum: 1 to 4 columns, a multiplier each");
        return NULL;
    }
    Py_buffer bufs[4];
    Py_ssize_t got = 0, n = -1;
    int ok = 1;
    for (; got < ncols; got++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(cols, got), &bufs[got], PyBUF_C_CONTIGUOUS) < 0) {
            ok = 0;
            break;
        }
        if (bufs[got].len % 8 || (n >= 0 && bufs[got].len / 8 != n)) {
            got++;
            PyErr_SetString(PyExc_ValueError, "multiset_sum: uint64 columns of one length");
            ok = 0;
            break;
        }
        n = bufs[got].len / 8;
    }
    uint64_t sum = 0;
    if (ok) {
        const uint8_t *mb = (const uint8_t *)muls.buf;
        uint64_t m[4] = {0, 0, 0, 0};
        const uint8_t *c[4] = {NULL, NULL, NULL, NULL};
        for (Py_ssize_t j = 0; j < ncols; j++) {
            m[j] = le64(mb + 8 * j);
            c[j] = (const uint8_t *)bufs[j].buf;
        }
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            uint64_t h = (uint64_t)key;
            for (Py_ssize_t j = 0; j < ncols; j++) h += le64(c[j] + 8 * i) * m[j];
            sum += mix64(h);
        }
        Py_END_ALLOW_THREADS
    }
    for (Py_ssize_t j = 0; j < got; j++) PyBuffer_Release(&bufs[j]);
    PyBuffer_Release(&muls);
    if (!ok) return NULL;
    return PyLong_FromUnsignedLongLong(sum);
}

static PyObject *copy_spans(PyObject *self, PyObject *args) {
    Py_buffer src, starts, lengths, dst;
    if (!PyArg_ParseTuple(args, "y*y*y*w*", &src, &starts, &lengths, &dst)) return NULL;
    int ok = starts.len % 8 == 0 && lengths.len == starts.len;
    Py_ssize_t n = starts.len / 8, total = 0;
    const uint8_t *sb = (const uint8_t *)starts.buf, *lb = (const uint8_t *)lengths.buf;
    for (Py_ssize_t i = 0; ok && i < n; i++) {  /* every span inside src, dst exactly filled */
        uint64_t a = le64(sb + 8 * i), len = le64(lb + 8 * i);
        if (a > (uint64_t)src.len || len > (uint64_t)src.len - a) ok = 0;
        else total += (Py_ssize_t)len;
        if (total > dst.len) ok = 0;
    }
    if (ok && total != dst.len) ok = 0;
    if (ok) {
        const uint8_t *in = (const uint8_t *)src.buf;
        uint8_t *out = (uint8_t *)dst.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            uint64_t a = le64(sb + 8 * i), len = le64(lb + 8 * i);
            memcpy(out, in + a, (size_t)len);
            out += len;
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&src);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&lengths);
    PyBuffer_Release(&dst);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "copy_spans: a span outside the source, or the "
                        "spans do not fill the destination");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *minishard_index(PyObject *self, PyObject *args) {
    Py_buffer raw, ids, starts, ends;
    unsigned long long base;
    if (!PyArg_ParseTuple(args, "y*Kw*w*w*", &raw, &base, &ids, &starts, &ends)) return NULL;
    Py_ssize_t n = raw.len / 24;
    int ok = raw.len % 24 == 0 && ids.len == 8 * n && starts.len == 8 * n && ends.len == 8 * n;
    long code = 0;
    if (ok && n > 0) {
        const uint8_t *in = (const uint8_t *)raw.buf;
        uint8_t *oi = (uint8_t *)ids.buf, *os = (uint8_t *)starts.buf, *oe = (uint8_t *)ends.buf;
        uint64_t id = 0, end = 0;
        int wrapped = 0, offset_wraps = 0;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            uint64_t d = le64(in + 8 * i), ofs = le64(in + 8 * (n + i));
            uint64_t size = le64(in + 8 * (2 * n + i));
            uint64_t inc = ofs + size, next_id = id + d, next_end = end + inc;
            if (inc < size) offset_wraps = 1;
            if (i > 0 && (next_id < id || next_end < end)) wrapped = 1;
            id = next_id;
            end = next_end;
            uint64_t start = end - size;
            memcpy(oi + 8 * i, &id, 8);
            memcpy(os + 8 * i, &start, 8);
            memcpy(oe + 8 * i, &end, 8);
        }
        Py_END_ALLOW_THREADS
        if (wrapped) code = 1;
        else if (offset_wraps || end + base < end) code = 2;
    }
    PyBuffer_Release(&raw);
    PyBuffer_Release(&ids);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&ends);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "minishard_index: 24 bytes per entry, an output "
                        "of 8 bytes per entry each");
        return NULL;
    }
    return PyLong_FromLong(code);
}

static PyMethodDef methods[] = {
    {"keyed_rows", keyed_rows, METH_VARARGS,
     "keyed_rows(src, width, keys, dst): the keyed row hash of annotation_spill.hash_rows."},
    {"multiset_sum", multiset_sum, METH_VARARGS,
     "multiset_sum(key, muls, cols): the sum of MultisetHash.add's row digests."},
    {"copy_spans", copy_spans, METH_VARARGS,
     "copy_spans(src, starts, lengths, dst): spans of src, back to back into dst."},
    {"minishard_index", minishard_index, METH_VARARGS,
     "minishard_index(raw, base, ids, starts, ends): decode_minishard_index's arrays; 0, or "
     "1 (a running sum wraps) or 2 (an offset wraps)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
