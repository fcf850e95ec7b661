//! An estimate of a replay's memory, made before anything is allocated, so that a machine or
//! trace too large for this computer is refused with a clear error instead of an abort.
//!
//! The figures are per item and deliberately on the high side (measured on this project's
//! benchmarks, release build): a PE costs its scheduler state, statistics and network-model
//! state (~100-120 bytes measured with 10 M PEs); a planned block its plan record, its
//! dependents and waiting state; a delivery its plan slot; a timeline record 32 bytes.

use crate::ReplayError;

/// Bytes per simulated PE.
pub const PER_PE_BYTES: u64 = 128;
/// Bytes per planned block (plan record, dependents, waiting state).
pub const PER_BLOCK_BYTES: u64 = 64;
/// Bytes per planned delivery.
pub const PER_DELIVERY_BYTES: u64 = 32;
/// Bytes per expanded block when a repeated trace must be expanded first.
pub const PER_EXPANDED_BLOCK_BYTES: u64 = 96;
/// Bytes per timeline record (the record, kept in a vector that grows by doubling).
pub const PER_TIMELINE_BYTES: u64 = 48;
/// Bytes per block of the bindings (a kind and a block id).
pub const PER_BOUND_BYTES: u64 = 5;

/// What a replay is estimated to need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footprint {
    /// Simulated PEs.
    pub pes: u64,
    /// Blocks the plan describes (one iteration of a repeated trace, or all).
    pub planned_blocks: u64,
    /// Deliveries the plan describes.
    pub planned_deliveries: u64,
    /// Blocks created by expanding a repeated trace (0 if it is not expanded).
    pub expanded_blocks: u64,
    /// Timeline records (0 without a timeline).
    pub timeline_blocks: u64,
    /// Blocks with bindings recorded (0 without).
    pub bound_blocks: u64,
}

impl Footprint {
    /// Estimated bytes (saturating).
    pub fn bytes(&self) -> u64 {
        self.pes
            .saturating_mul(PER_PE_BYTES)
            .saturating_add(self.planned_blocks.saturating_mul(PER_BLOCK_BYTES))
            .saturating_add(self.planned_deliveries.saturating_mul(PER_DELIVERY_BYTES))
            .saturating_add(
                self.expanded_blocks
                    .saturating_mul(PER_EXPANDED_BLOCK_BYTES),
            )
            .saturating_add(self.timeline_blocks.saturating_mul(PER_TIMELINE_BYTES))
            .saturating_add(self.bound_blocks.saturating_mul(PER_BOUND_BYTES))
    }

    /// The largest part, in words ("100000000 PEs"), for error messages.
    pub fn largest_part(&self) -> String {
        let parts = [
            (self.pes.saturating_mul(PER_PE_BYTES), self.pes, "PEs"),
            (
                self.planned_blocks.saturating_mul(PER_BLOCK_BYTES),
                self.planned_blocks,
                "planned blocks",
            ),
            (
                self.planned_deliveries.saturating_mul(PER_DELIVERY_BYTES),
                self.planned_deliveries,
                "planned deliveries",
            ),
            (
                self.expanded_blocks
                    .saturating_mul(PER_EXPANDED_BLOCK_BYTES),
                self.expanded_blocks,
                "blocks of the expanded trace",
            ),
            (
                self.timeline_blocks.saturating_mul(PER_TIMELINE_BYTES),
                self.timeline_blocks,
                "timeline records",
            ),
        ];
        let (_, n, what) = parts
            .iter()
            .max_by_key(|p| p.0)
            .copied()
            .unwrap_or((0, 0, ""));
        format!("{n} {what}")
    }

    /// An error if the estimate exceeds `limit` bytes.
    pub fn check(&self, limit: Option<u64>) -> Result<(), ReplayError> {
        match limit {
            Some(limit) if self.bytes() > limit => Err(ReplayError::TooLarge {
                needed_bytes: self.bytes(),
                limit_bytes: limit,
                largest: self.largest_part(),
            }),
            _ => Ok(()),
        }
    }
}

pub use sim_core::units::human_bytes;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_adds_the_parts_and_names_the_largest() {
        let f = Footprint {
            pes: 1_000_000,
            planned_blocks: 10,
            planned_deliveries: 10,
            expanded_blocks: 0,
            timeline_blocks: 0,
            bound_blocks: 0,
        };
        assert_eq!(
            f.bytes(),
            1_000_000 * PER_PE_BYTES + 10 * PER_BLOCK_BYTES + 10 * PER_DELIVERY_BYTES
        );
        assert_eq!(f.largest_part(), "1000000 PEs");
        assert!(f.check(Some(f.bytes())).is_ok());
        let e = f.check(Some(f.bytes() - 1)).unwrap_err().to_string();
        assert!(e.contains("1000000 PEs"), "{e}");
        assert!(f.check(None).is_ok());
        let huge = Footprint { pes: u64::MAX, ..f };
        assert_eq!(huge.bytes(), u64::MAX);
    }

    #[test]
    fn bytes_read_like_people_write_them() {
        assert_eq!(human_bytes(100), "100 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(640 << 20), "640 MiB");
        assert_eq!(human_bytes(12 << 30), "12 GiB");
    }
}
