//! A vector stored in fixed chunks of 65,536 elements: it grows a chunk at a time, so a large
//! one never has the up-to-2x spare capacity of a doubling `Vec`, nor the moment of a
//! reallocation when the old and the new buffers both exist (at a million objects the
//! messages in flight fill several hundred MB of item slots). Indexing costs one more load
//! (the chunk's pointer, which stays in cache).

const BITS: u32 = 16;
const CHUNK: usize = 1 << BITS;
const MASK: usize = CHUNK - 1;

#[derive(Debug)]
pub(crate) struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Chunked<T> {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn push(&mut self, x: T) {
        if self.len & MASK == 0 {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        self.chunks.last_mut().expect("a chunk").push(x);
        self.len += 1;
    }

    /// Elements the chunks can hold without another allocation.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.chunks.len() * CHUNK
    }
}

impl<T> std::ops::Index<usize> for Chunked<T> {
    type Output = T;
    #[inline]
    fn index(&self, i: usize) -> &T {
        &self.chunks[i >> BITS][i & MASK]
    }
}

impl<T> std::ops::IndexMut<usize> for Chunked<T> {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.chunks[i >> BITS][i & MASK]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_like_a_vec_across_chunks() {
        let mut c = Chunked::default();
        let mut v = Vec::new();
        for i in 0..(2 * CHUNK + 17) as u64 {
            c.push(i * 3);
            v.push(i * 3);
        }
        assert_eq!(c.len(), v.len());
        assert_eq!(c.capacity(), 3 * CHUNK);
        for i in [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK, 2 * CHUNK + 16] {
            assert_eq!(c[i], v[i]);
            c[i] += 1;
            assert_eq!(c[i], v[i] + 1);
        }
    }
}
