//! Storage with Fortran's by-reference semantics.
//!
//! Every variable lives in a [`Buffer`]: a column-major block of elements of
//! one type. Real buffers carry a derivative part beside the value part
//! (scalar forward/reverse mode: one double per element), which is zero when
//! the buffer is created, as OpenAD's active type is default-initialised.
//! A [`Place`] is a view into a buffer: an offset and, for arrays, per
//! dimension a lower bound, an extent and a stride. Argument passing binds a
//! dummy to a place of the actual, so writes through the dummy reach the
//! caller's storage; array sections, sequence association and rank changes
//! are all just different places.

use std::rc::Rc;

use smallvec::SmallVec;

use crate::value::{Scalar, Shape, Ty};

/// Index of a buffer in [`Memory`].
pub type BufId = u32;

/// The elements of a buffer.
#[derive(Clone, Debug)]
pub enum Cells {
    /// Reals with their derivative parts.
    Real {
        /// Value parts.
        v: Vec<f64>,
        /// Derivative parts.
        d: Vec<f64>,
    },
    /// Integers.
    Int(Vec<i64>),
    /// Logicals.
    Bool(Vec<bool>),
    /// Strings.
    Str(Vec<Rc<str>>),
}

impl Cells {
    /// Zero-initialised cells of `ty`.
    pub fn new(ty: Ty, len: usize) -> Self {
        match ty {
            Ty::Real => Cells::Real {
                v: vec![0.0; len],
                d: vec![0.0; len],
            },
            Ty::Int => Cells::Int(vec![0; len]),
            Ty::Bool => Cells::Bool(vec![false; len]),
            Ty::Str => Cells::Str(vec![Rc::from(""); len]),
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Cells::Real { v, .. } => v.len(),
            Cells::Int(v) => v.len(),
            Cells::Bool(v) => v.len(),
            Cells::Str(v) => v.len(),
        }
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type.
    pub fn ty(&self) -> Ty {
        match self {
            Cells::Real { .. } => Ty::Real,
            Cells::Int(_) => Ty::Int,
            Cells::Bool(_) => Ty::Bool,
            Cells::Str(_) => Ty::Str,
        }
    }
}

/// One block of storage.
#[derive(Clone, Debug)]
pub struct Buffer {
    /// The elements.
    pub cells: Cells,
    /// Stores round reals to single precision (a passive `real(4)`).
    pub single: bool,
}

/// One dimension of a place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim {
    /// Lower bound.
    pub lo: i64,
    /// Extent.
    pub n: usize,
    /// Distance between consecutive elements, in elements.
    pub stride: isize,
}

impl Dim {
    /// Upper bound.
    pub fn hi(&self) -> i64 {
        self.lo + self.n as i64 - 1
    }
}

/// A view of storage: a scalar element (no dims) or an array section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// The buffer.
    pub buf: BufId,
    /// Offset of the first element.
    pub offset: usize,
    /// Dimensions, first dimension first; empty for a scalar.
    pub dims: SmallVec<[Dim; 2]>,
}

impl Place {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.dims.iter().map(|d| d.n).product()
    }

    /// Whether the place has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether this is a single element.
    pub fn is_scalar(&self) -> bool {
        self.dims.is_empty()
    }

    /// Extents.
    pub fn shape(&self) -> Shape {
        self.dims.iter().map(|d| d.n).collect()
    }

    /// Whether the elements are consecutive in column-major order.
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1isize;
        for d in &self.dims {
            if d.n > 1 && d.stride != expected {
                return false;
            }
            expected *= d.n as isize;
        }
        true
    }

    /// Buffer offsets of the elements in column-major order.
    pub fn offsets(&self) -> Offsets<'_> {
        Offsets {
            place: self,
            index: SmallVec::from_elem(0, self.dims.len()),
            remaining: self.len(),
        }
    }

    /// The offset of the element with 0-based position `k` in column-major
    /// order.
    pub fn offset_of(&self, mut k: usize) -> usize {
        let mut off = self.offset as isize;
        for d in &self.dims {
            let i = k % d.n.max(1);
            k /= d.n.max(1);
            off += i as isize * d.stride;
        }
        off as usize
    }
}

/// Iterator over the buffer offsets of a place.
pub struct Offsets<'a> {
    place: &'a Place,
    index: SmallVec<[usize; 4]>,
    remaining: usize,
}

impl Iterator for Offsets<'_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let mut off = self.place.offset as isize;
        for (i, d) in self.index.iter().zip(&self.place.dims) {
            off += *i as isize * d.stride;
        }
        for (i, d) in self.index.iter_mut().zip(&self.place.dims) {
            *i += 1;
            if *i < d.n {
                break;
            }
            *i = 0;
        }
        Some(off as usize)
    }
}

/// All buffers of one run.
#[derive(Debug, Default)]
pub struct Memory {
    bufs: Vec<Option<Buffer>>,
    free: Vec<BufId>,
    /// Elements of all live buffers, an empty buffer counting as one (the
    /// machine checks its element limit against this before allocating, so
    /// not even empty buffers pile up without bound).
    elements: usize,
}

impl Memory {
    /// Allocates a zero-initialised buffer. The caller has checked `len`
    /// against its limits.
    pub fn alloc(&mut self, ty: Ty, len: usize, single: bool) -> BufId {
        self.elements += len.max(1);
        let buffer = Buffer {
            cells: Cells::new(ty, len),
            single,
        };
        if let Some(id) = self.free.pop() {
            self.bufs[id as usize] = Some(buffer);
            id
        } else {
            self.bufs.push(Some(buffer));
            (self.bufs.len() - 1) as BufId
        }
    }

    /// Releases a buffer (a local going out of scope).
    pub fn release(&mut self, id: BufId) {
        if let Some(slot) = self.bufs.get_mut(id as usize) {
            if let Some(b) = slot.take() {
                self.elements -= b.cells.len().max(1);
                self.free.push(id);
            }
        }
    }

    /// The buffer `id`.
    pub fn buf(&self, id: BufId) -> &Buffer {
        self.bufs[id as usize]
            .as_ref()
            .expect("places only refer to live buffers")
    }

    /// The buffer `id`, mutably.
    pub fn buf_mut(&mut self, id: BufId) -> &mut Buffer {
        self.bufs[id as usize]
            .as_mut()
            .expect("places only refer to live buffers")
    }

    /// Reads the value part of the element at `off`.
    pub fn get(&self, id: BufId, off: usize) -> Scalar {
        match &self.buf(id).cells {
            Cells::Real { v, .. } => Scalar::Real(v[off]),
            Cells::Int(v) => Scalar::Int(v[off]),
            Cells::Bool(v) => Scalar::Bool(v[off]),
            Cells::Str(v) => Scalar::Str(v[off].clone()),
        }
    }

    /// Writes the value part of the element at `off`, converting as an
    /// assignment does. `None` when the value cannot be converted.
    pub fn set(&mut self, id: BufId, off: usize, value: &Scalar) -> Option<()> {
        let buf = self.buf_mut(id);
        let single = buf.single;
        match &mut buf.cells {
            Cells::Real { v, .. } => {
                let x = value.as_real()?;
                v[off] = if single { x as f32 as f64 } else { x };
            }
            Cells::Int(v) => v[off] = value.as_int()?,
            Cells::Bool(v) => v[off] = value.as_bool()?,
            Cells::Str(v) => match value {
                Scalar::Str(s) => v[off] = s.clone(),
                _ => return None,
            },
        }
        Some(())
    }

    /// The derivative part of the element at `off` (0 for non-reals).
    pub fn get_d(&self, id: BufId, off: usize) -> f64 {
        match &self.buf(id).cells {
            Cells::Real { d, .. } => d[off],
            _ => 0.0,
        }
    }

    /// Writes the derivative part of the element at `off`; ignored for
    /// non-reals.
    pub fn set_d(&mut self, id: BufId, off: usize, x: f64) {
        if let Cells::Real { d, .. } = &mut self.buf_mut(id).cells {
            d[off] = x;
        }
    }

    /// Grows a rank-one buffer to `len` elements, keeping its contents.
    /// The caller has checked `len` against its limits.
    pub fn grow(&mut self, id: BufId, len: usize) {
        let before = self.buf(id).cells.len().max(1);
        if len > before {
            self.elements += len - before;
        }
        let buf = self.buf_mut(id);
        match &mut buf.cells {
            Cells::Real { v, d } => {
                if v.len() < len {
                    v.resize(len, 0.0);
                    d.resize(len, 0.0);
                }
            }
            Cells::Int(v) => {
                if v.len() < len {
                    v.resize(len, 0)
                }
            }
            Cells::Bool(v) => {
                if v.len() < len {
                    v.resize(len, false)
                }
            }
            Cells::Str(v) => {
                if v.len() < len {
                    v.resize(len, Rc::from(""))
                }
            }
        }
    }

    /// Number of live buffers (for statistics).
    pub fn live(&self) -> usize {
        self.bufs.len() - self.free.len()
    }

    /// Number of elements of all live buffers (an empty one counts as one).
    pub fn elements(&self) -> usize {
        self.elements
    }
}

/// A contiguous column-major place over a whole buffer, with the given
/// bounds (first dimension first). The bounds describe storage that
/// exists, so extents and strides fit (the arithmetic saturates anyway).
pub fn whole(buf: BufId, offset: usize, bounds: &[(i64, i64)]) -> Place {
    let mut dims = SmallVec::new();
    let mut stride = 1isize;
    for &(lo, hi) in bounds {
        let n = usize::try_from(crate::limits::extent(lo, hi)).unwrap_or(usize::MAX);
        dims.push(Dim { lo, n, stride });
        stride = stride.saturating_mul(isize::try_from(n).unwrap_or(isize::MAX));
    }
    Place { buf, offset, dims }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_walk_column_major() {
        let p = whole(0, 0, &[(1, 2), (1, 3)]);
        assert_eq!(p.offsets().collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5]);
        assert!(p.is_contiguous());
        // The second row of a 2x3 matrix: stride 2.
        let row = Place {
            buf: 0,
            offset: 1,
            dims: SmallVec::from_slice(&[Dim {
                lo: 1,
                n: 3,
                stride: 2,
            }]),
        };
        assert_eq!(row.offsets().collect::<Vec<_>>(), [1, 3, 5]);
        assert!(!row.is_contiguous());
        assert_eq!(row.offset_of(2), 5);
    }

    #[test]
    fn live_elements_are_counted() {
        let mut m = Memory::default();
        let a = m.alloc(Ty::Real, 10, false);
        let empty = m.alloc(Ty::Int, 0, false);
        assert_eq!(m.elements(), 11);
        m.grow(empty, 4);
        m.grow(a, 5);
        assert_eq!(m.elements(), 14);
        m.release(a);
        m.release(a);
        assert_eq!(m.elements(), 4);
        m.release(empty);
        assert_eq!(m.elements(), 0);
    }

    #[test]
    fn single_precision_buffers_round_on_store() {
        let mut m = Memory::default();
        let b = m.alloc(Ty::Real, 1, true);
        m.set(b, 0, &Scalar::Real(0.1)).unwrap();
        assert_eq!(m.get(b, 0), Scalar::Real(0.1f32 as f64));
        let i = m.alloc(Ty::Int, 1, false);
        m.set(i, 0, &Scalar::Real(-2.7)).unwrap();
        assert_eq!(m.get(i, 0), Scalar::Int(-2));
    }
}
