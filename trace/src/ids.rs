//! Newtype identifiers. All are dense indices except [`MsgId`], which is a label.

use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! id {
    ($(#[$m:meta])* $name:ident, $t:ty, $prefix:literal) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub $t);
        impl $name {
            /// The raw value as an index.
            #[inline]
            pub const fn index(self) -> usize {
                self.0 as usize
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

id!(
    /// An object (chare, array element or rank): index into [`crate::Trace::objects`].
    ObjectId, u32, "obj"
);
id!(
    /// An entry method: index into [`crate::Trace::entries`].
    EntryId, u32, "entry"
);
id!(
    /// An execution block: its position in the trace (blocks are numbered in file order).
    BlockId, u32, "block"
);
id!(
    /// A processor (PE).
    PeId, u32, "pe"
);
id!(
    /// A multicast group: index into [`crate::Trace::groups`].
    GroupId, u32, "group"
);
id!(
    /// A message label, unique among the trace's sends. Blocks name their triggering message by
    /// it. Labels need not be dense; a trigger may name a label that no block sends (the replay
    /// then reports the block as stuck).
    MsgId, u64, "msg"
);
