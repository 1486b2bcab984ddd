/* Optional C accelerator of the MOSAIC hot paths (shardkit.formats.mosaic._native).
 *
 * Lookup(buffer, fget, unrolled_start, entry_size, num_entries, key_len, offset_len):
 *   .get(key)     the stored bytes of the key's Object, None when the key is absent (no rank,
 *                 a rank past the entries, another key's entry, a deleted entry), or
 *                 NotImplemented when the general Python path must decide (a conflict, an
 *                 entry or an Object written in another way, anything out of bounds).
 *   .get_at(key)  the same, as (offset of the Object, stored bytes).
 *   fget is the FMPH-GO function's get (key -> rank or None), called once per lookup.
 * tile_objects(buffer, base, offsets, strict=False) -> list of the stored bytes of every Object
 *   of a tile's data (Voids skipped), their absolute offsets appended to the list `offsets`
 *   unless it is None; None when the data is not a run of well-formed elements (the Python
 *   path then says where) or, with strict, holds an element other than Object, Void and a
 *   leading CRC-32. IDs of 1 to 4 bytes, sizes of 1 to 8 bytes.
 *
 * Each has a pure-Python twin in reader.py; the tests run both on the same files.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    Py_buffer view;
    int has_view;
    PyObject *fget;
    Py_ssize_t ustart, esize, n, klen, off_len;
} Lookup;

static void Lookup_dealloc(Lookup *self) {
    if (self->has_view) PyBuffer_Release(&self->view);
    Py_XDECREF(self->fget);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Lookup_init(Lookup *self, PyObject *args, PyObject *kw) {
    PyObject *buf, *fget;
    if (!PyArg_ParseTuple(args, "OOnnnnn", &buf, &fget, &self->ustart, &self->esize, &self->n,
                          &self->klen, &self->off_len))
        return -1;
    if (self->klen < 1 || self->off_len < 1 || self->off_len > 8 ||
        self->esize != self->klen + 4 + self->off_len || self->ustart < 0 || self->n < 0) {
        PyErr_SetString(PyExc_ValueError, "bad lookup plan");
        return -1;
    }
    if (self->has_view) {
        PyBuffer_Release(&self->view);
        self->has_view = 0;
    }
    if (PyObject_GetBuffer(buf, &self->view, PyBUF_SIMPLE) < 0) return -1;
    self->has_view = 1;
    Py_XSETREF(self->fget, Py_NewRef(fget));
    return 0;
}

/* 0: absent; 1: found (*off, *a, *z set); 2: let Python decide; -1: error */
static int locate(Lookup *self, PyObject *key, Py_ssize_t *off, Py_ssize_t *a, Py_ssize_t *z) {
    if (!PyBytes_Check(key) || PyBytes_GET_SIZE(key) != self->klen) return 2;
    PyObject *r = PyObject_CallOneArg(self->fget, key);
    if (r == NULL) return -1;
    if (r == Py_None) {
        Py_DECREF(r);
        return 0;
    }
    Py_ssize_t rank = PyLong_AsSsize_t(r);
    Py_DECREF(r);
    if (rank == -1 && PyErr_Occurred()) return -1;
    if (rank < 0 || rank >= self->n) return 0;
    const unsigned char *buf = (const unsigned char *)self->view.buf;
    Py_ssize_t size = self->view.len, klen = self->klen;
    if (self->esize > PY_SSIZE_T_MAX / (rank + 1)) return 2;
    Py_ssize_t p = self->ustart + rank * self->esize;
    if (p < 0 || p + self->esize > size) return 2;
    const unsigned char *e = buf + p;
    if (e[0] == 0xEC) return 0; /* a deleted entry */
    if (e[0] != 0xA0 || e[1] != (0x80 | klen)) return 2;
    if (memcmp(e + 2, PyBytes_AS_STRING(key), (size_t)klen) != 0) return 0; /* another key */
    if (e[2 + klen] != 0xA1 || e[3 + klen] != (0x80 | self->off_len)) return 2;
    unsigned long long o = 0;
    for (Py_ssize_t i = 0; i < self->off_len; i++) o = (o << 8) | e[4 + klen + i];
    if (o >= (unsigned long long)size || size - (Py_ssize_t)o < 2) return 2;
    const unsigned char *h = buf + o;
    if (h[0] != 0xF0 || h[1] == 0) return 2;
    int len = 0;
    while (!(h[1] & (0x80 >> len))) len++;
    len += 1; /* 1 to 8 bytes */
    if ((Py_ssize_t)o + 1 + len > size) return 2;
    unsigned long long n = h[1] & (0xFF >> len);
    for (int i = 1; i < len; i++) n = (n << 8) | h[1 + i];
    Py_ssize_t start = (Py_ssize_t)o + 1 + len;
    if (n > (unsigned long long)(size - start)) return 2;
    *off = (Py_ssize_t)o;
    *a = start;
    *z = start + (Py_ssize_t)n;
    return 1;
}

/* The stored bytes of key (a new reference), None (absent) or NotImplemented (the Python
   path decides); its Object's offset in *off when found. NULL on error. */
static PyObject *located_bytes(Lookup *self, PyObject *key, Py_ssize_t *off) {
    Py_ssize_t a, z;
    int got = locate(self, key, off, &a, &z);
    if (got < 0) return NULL;
    if (got == 0) Py_RETURN_NONE;
    if (got == 2) Py_RETURN_NOTIMPLEMENTED;
    return PyBytes_FromStringAndSize((const char *)self->view.buf + a, z - a);
}

static PyObject *Lookup_get(Lookup *self, PyObject *key) {
    Py_ssize_t off;
    return located_bytes(self, key, &off);
}

static PyObject *Lookup_get_at(Lookup *self, PyObject *key) {
    Py_ssize_t off;
    PyObject *data = located_bytes(self, key, &off);
    if (data == NULL || !PyBytes_CheckExact(data)) return data;
    return Py_BuildValue("(nN)", off, data);
}

static PyObject *Lookup_release(Lookup *self, PyObject *unused) {
    if (self->has_view) {
        PyBuffer_Release(&self->view);
        self->has_view = 0;
    }
    self->n = 0; /* every later lookup: absent */
    Py_RETURN_NONE;
}

static PyMethodDef Lookup_methods[] = {
    {"get", (PyCFunction)Lookup_get, METH_O, "The stored bytes of key's Object, or None."},
    {"get_at", (PyCFunction)Lookup_get_at, METH_O, "(offset, stored bytes), or None."},
    {"release", (PyCFunction)Lookup_release, METH_NOARGS, "Let the buffer go."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject LookupType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shardkit.formats.mosaic._native.Lookup",
    .tp_basicsize = sizeof(Lookup),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Lookup_init,
    .tp_dealloc = (destructor)Lookup_dealloc,
    .tp_methods = Lookup_methods,
};

static PyObject *tile_objects(PyObject *mod, PyObject *args) {
    PyObject *buf, *offsets;
    Py_ssize_t base;
    int strict = 0;
    if (!PyArg_ParseTuple(args, "OnO|p", &buf, &base, &offsets, &strict)) return NULL;
    if (offsets != Py_None && !PyList_Check(offsets)) {
        PyErr_SetString(PyExc_TypeError, "offsets: a list or None");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *p = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len, pos = 0;
    Py_ssize_t start_len = offsets == Py_None ? 0 : PyList_GET_SIZE(offsets);
    PyObject *out = PyList_New(0);
    if (out == NULL) goto fail;
    while (pos < n) {
        unsigned char b0 = p[pos];
        if (b0 < 0x10) goto unusual;
        int idlen = b0 >= 0x80 ? 1 : b0 >= 0x40 ? 2 : b0 >= 0x20 ? 3 : 4;
        if (pos + idlen >= n) goto unusual;
        Py_ssize_t q = pos + idlen;
        unsigned char s0 = p[q];
        if (s0 == 0) goto unusual;
        int len = 1; /* the marker bit's position + 1: 1 to 8 (s0 is not 0) */
        while (!(s0 & (0x80 >> (len - 1)))) len++;
        if (q + len > n) goto unusual;
        unsigned long long size = s0 & (0xFF >> len);
        for (int i = 1; i < len; i++) size = (size << 8) | p[q + i];
        Py_ssize_t a = q + len;
        if (size > (unsigned long long)(n - a)) goto unusual;
        Py_ssize_t z = a + (Py_ssize_t)size;
        if (strict && !(idlen == 1 && (b0 == 0xF0 || b0 == 0xEC || (b0 == 0xBF && pos == 0))))
            goto unusual; /* not Object, Void or a leading CRC-32: the careful walk says */
        if (idlen == 1 && b0 == 0xF0) {
            PyObject *obj = PyBytes_FromStringAndSize((const char *)p + a, z - a);
            if (obj == NULL || PyList_Append(out, obj) < 0) {
                Py_XDECREF(obj);
                goto fail;
            }
            Py_DECREF(obj);
            if (offsets != Py_None) {
                PyObject *o = PyLong_FromSsize_t(base + pos);
                if (o == NULL || PyList_Append(offsets, o) < 0) {
                    Py_XDECREF(o);
                    goto fail;
                }
                Py_DECREF(o);
            }
        }
        pos = z;
    }
    PyBuffer_Release(&view);
    return out;
unusual:
    if (offsets != Py_None) PyList_SetSlice(offsets, start_len, PyList_GET_SIZE(offsets), NULL);
    Py_DECREF(out);
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(out);
    PyBuffer_Release(&view);
    return NULL;
}

static PyMethodDef module_methods[] = {
    {"tile_objects", tile_objects, METH_VARARGS,
     "The stored bytes of every Object of a tile's data, or None when unusual."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_native",
                                       "MOSAIC hot paths in C (see reader.py's twins).", -1,
                                       module_methods};

PyMODINIT_FUNC PyInit__native(void) {
    if (PyType_Ready(&LookupType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Lookup", (PyObject *)&LookupType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
