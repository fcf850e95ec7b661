//! Reads OTF2 trace archives (the format of Score-P) through the official OTF2 C library
//! (Debian `libopen-trace-format2-dev`, OTF2 3.x) into plain Rust data.
//!
//! Contract:
//! - [`read`] opens an archive's anchor file (`traces.otf2`), reads its global definitions
//!   (clock, strings, regions, locations, groups, communicators) and every location's events
//!   that whatif uses (region enter/leave, MPI point-to-point and collective records), and
//!   returns them as an [`Archive`]. Other event kinds are counted, not kept.
//! - Nothing here interprets the events: mapping them to execution blocks is the
//!   `importers` crate's job.
//! - Errors of the library are returned as [`Error`] values with the failing call and the
//!   library's own error name; the library's messages to standard error are silenced. The
//!   number of events kept is bounded before they are read (from the definitions) and while
//!   they are read.
//! - [`read_isolated`] runs [`read`] in a child process with a deadline: the library's own
//!   failures on malformed archives (endless loops, heap corruption) then end as an [`Error`].
//! - This is the only crate of the workspace with `unsafe` code: the FFI declarations in
//!   `ffi` and the callbacks that receive the library's records. Each `unsafe` block says why
//!   it is sound.

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char};
use std::path::Path;

#[cfg(unix)]
mod isolated;
#[cfg(unix)]
pub use isolated::read_isolated;

/// Raw declarations of the OTF2 3.x C API used here (from `otf2/OTF2_*.h`).
#[allow(non_camel_case_types, missing_docs)]
mod ffi {
    use std::ffi::{c_char, c_int, c_void};

    pub type OTF2_ErrorCode = c_int;
    pub type OTF2_CallbackCode = c_int;
    pub const OTF2_SUCCESS: OTF2_ErrorCode = 0;
    pub const OTF2_CALLBACK_SUCCESS: OTF2_CallbackCode = 0;
    pub const OTF2_CALLBACK_INTERRUPT: OTF2_CallbackCode = 1;

    #[repr(C)]
    pub struct OTF2_Reader {
        _p: [u8; 0],
    }
    #[repr(C)]
    pub struct OTF2_GlobalDefReader {
        _p: [u8; 0],
    }
    #[repr(C)]
    pub struct OTF2_GlobalDefReaderCallbacks {
        _p: [u8; 0],
    }
    #[repr(C)]
    pub struct OTF2_DefReader {
        _p: [u8; 0],
    }
    #[repr(C)]
    pub struct OTF2_EvtReader {
        _p: [u8; 0],
    }
    #[repr(C)]
    pub struct OTF2_GlobalEvtReader {
        _p: [u8; 0],
    }
    #[repr(C)]
    pub struct OTF2_GlobalEvtReaderCallbacks {
        _p: [u8; 0],
    }

    pub type ClockCb = unsafe extern "C" fn(*mut c_void, u64, u64, u64, u64) -> OTF2_CallbackCode;
    pub type StringCb = unsafe extern "C" fn(*mut c_void, u32, *const c_char) -> OTF2_CallbackCode;
    pub type RegionCb = unsafe extern "C" fn(
        *mut c_void,
        u32,
        u32,
        u32,
        u32,
        u8,
        u8,
        u32,
        u32,
        u32,
        u32,
    ) -> OTF2_CallbackCode;
    pub type LocationCb =
        unsafe extern "C" fn(*mut c_void, u64, u32, u8, u64, u32) -> OTF2_CallbackCode;
    pub type GroupCb = unsafe extern "C" fn(
        *mut c_void,
        u32,
        u32,
        u8,
        u8,
        u32,
        u32,
        *const u64,
    ) -> OTF2_CallbackCode;
    pub type CommCb =
        unsafe extern "C" fn(*mut c_void, u32, u32, u32, u32, u32) -> OTF2_CallbackCode;

    pub type RegionEvtCb =
        unsafe extern "C" fn(u64, u64, *mut c_void, *mut c_void, u32) -> OTF2_CallbackCode;
    pub type P2pCb = unsafe extern "C" fn(
        u64,
        u64,
        *mut c_void,
        *mut c_void,
        u32,
        u32,
        u32,
        u64,
    ) -> OTF2_CallbackCode;
    pub type P2pReqCb = unsafe extern "C" fn(
        u64,
        u64,
        *mut c_void,
        *mut c_void,
        u32,
        u32,
        u32,
        u64,
        u64,
    ) -> OTF2_CallbackCode;
    pub type ReqCb =
        unsafe extern "C" fn(u64, u64, *mut c_void, *mut c_void, u64) -> OTF2_CallbackCode;
    pub type CollBeginCb =
        unsafe extern "C" fn(u64, u64, *mut c_void, *mut c_void) -> OTF2_CallbackCode;
    pub type CollEndCb = unsafe extern "C" fn(
        u64,
        u64,
        *mut c_void,
        *mut c_void,
        u8,
        u32,
        u32,
        u64,
        u64,
    ) -> OTF2_CallbackCode;
    pub type UnknownCb =
        unsafe extern "C" fn(u64, u64, *mut c_void, *mut c_void) -> OTF2_CallbackCode;
    /// The last argument is a `va_list`, passed as a pointer on x86-64 and AArch64; the
    /// callback never reads it.
    pub type ErrorCb = unsafe extern "C" fn(
        *mut c_void,
        *const c_char,
        u64,
        *const c_char,
        OTF2_ErrorCode,
        *const c_char,
        *mut c_void,
    ) -> OTF2_ErrorCode;

    unsafe extern "C" {
        pub fn OTF2_Error_GetName(code: OTF2_ErrorCode) -> *const c_char;
        pub fn OTF2_Error_GetDescription(code: OTF2_ErrorCode) -> *const c_char;
        pub fn OTF2_Error_RegisterCallback(
            cb: Option<ErrorCb>,
            user: *mut c_void,
        ) -> Option<ErrorCb>;

        pub fn OTF2_Reader_Open(anchor: *const c_char) -> *mut OTF2_Reader;
        pub fn OTF2_Reader_Close(r: *mut OTF2_Reader) -> OTF2_ErrorCode;
        pub fn OTF2_Reader_SetSerialCollectiveCallbacks(r: *mut OTF2_Reader) -> OTF2_ErrorCode;
        pub fn OTF2_Reader_GetGlobalDefReader(r: *mut OTF2_Reader) -> *mut OTF2_GlobalDefReader;
        pub fn OTF2_Reader_RegisterGlobalDefCallbacks(
            r: *mut OTF2_Reader,
            d: *mut OTF2_GlobalDefReader,
            cbs: *const OTF2_GlobalDefReaderCallbacks,
            user: *mut c_void,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_Reader_ReadAllGlobalDefinitions(
            r: *mut OTF2_Reader,
            d: *mut OTF2_GlobalDefReader,
            n: *mut u64,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_Reader_CloseGlobalDefReader(
            r: *mut OTF2_Reader,
            d: *mut OTF2_GlobalDefReader,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_Reader_SelectLocation(r: *mut OTF2_Reader, loc: u64) -> OTF2_ErrorCode;
        pub fn OTF2_Reader_OpenDefFiles(r: *mut OTF2_Reader) -> OTF2_ErrorCode;
        pub fn OTF2_Reader_CloseDefFiles(r: *mut OTF2_Reader) -> OTF2_ErrorCode;
        pub fn OTF2_Reader_OpenEvtFiles(r: *mut OTF2_Reader) -> OTF2_ErrorCode;
        pub fn OTF2_Reader_CloseEvtFiles(r: *mut OTF2_Reader) -> OTF2_ErrorCode;
        pub fn OTF2_Reader_GetDefReader(r: *mut OTF2_Reader, loc: u64) -> *mut OTF2_DefReader;
        pub fn OTF2_Reader_ReadAllLocalDefinitions(
            r: *mut OTF2_Reader,
            d: *mut OTF2_DefReader,
            n: *mut u64,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_Reader_CloseDefReader(
            r: *mut OTF2_Reader,
            d: *mut OTF2_DefReader,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_Reader_GetEvtReader(r: *mut OTF2_Reader, loc: u64) -> *mut OTF2_EvtReader;
        pub fn OTF2_Reader_GetGlobalEvtReader(r: *mut OTF2_Reader) -> *mut OTF2_GlobalEvtReader;
        pub fn OTF2_Reader_RegisterGlobalEvtCallbacks(
            r: *mut OTF2_Reader,
            e: *mut OTF2_GlobalEvtReader,
            cbs: *const OTF2_GlobalEvtReaderCallbacks,
            user: *mut c_void,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_Reader_ReadAllGlobalEvents(
            r: *mut OTF2_Reader,
            e: *mut OTF2_GlobalEvtReader,
            n: *mut u64,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_Reader_CloseGlobalEvtReader(
            r: *mut OTF2_Reader,
            e: *mut OTF2_GlobalEvtReader,
        ) -> OTF2_ErrorCode;

        pub fn OTF2_GlobalDefReaderCallbacks_New() -> *mut OTF2_GlobalDefReaderCallbacks;
        pub fn OTF2_GlobalDefReaderCallbacks_Delete(c: *mut OTF2_GlobalDefReaderCallbacks);
        pub fn OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(
            c: *mut OTF2_GlobalDefReaderCallbacks,
            f: ClockCb,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalDefReaderCallbacks_SetStringCallback(
            c: *mut OTF2_GlobalDefReaderCallbacks,
            f: StringCb,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalDefReaderCallbacks_SetRegionCallback(
            c: *mut OTF2_GlobalDefReaderCallbacks,
            f: RegionCb,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalDefReaderCallbacks_SetLocationCallback(
            c: *mut OTF2_GlobalDefReaderCallbacks,
            f: LocationCb,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalDefReaderCallbacks_SetGroupCallback(
            c: *mut OTF2_GlobalDefReaderCallbacks,
            f: GroupCb,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalDefReaderCallbacks_SetCommCallback(
            c: *mut OTF2_GlobalDefReaderCallbacks,
            f: CommCb,
        ) -> OTF2_ErrorCode;

        pub fn OTF2_GlobalEvtReaderCallbacks_New() -> *mut OTF2_GlobalEvtReaderCallbacks;
        pub fn OTF2_GlobalEvtReaderCallbacks_Delete(c: *mut OTF2_GlobalEvtReaderCallbacks);
        pub fn OTF2_GlobalEvtReaderCallbacks_SetUnknownCallback(
            c: *mut OTF2_GlobalEvtReaderCallbacks,
            f: UnknownCb,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalEvtReaderCallbacks_SetEnterCallback(
            c: *mut OTF2_GlobalEvtReaderCallbacks,
            f: RegionEvtCb,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalEvtReaderCallbacks_SetLeaveCallback(
            c: *mut OTF2_GlobalEvtReaderCallbacks,
            f: RegionEvtCb,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalEvtReaderCallbacks_SetMpiSendCallback(
            c: *mut OTF2_GlobalEvtReaderCallbacks,
            f: P2pCb,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalEvtReaderCallbacks_SetMpiRecvCallback(
            c: *mut OTF2_GlobalEvtReaderCallbacks,
            f: P2pCb,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalEvtReaderCallbacks_SetMpiIsendCallback(
            c: *mut OTF2_GlobalEvtReaderCallbacks,
            f: P2pReqCb,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalEvtReaderCallbacks_SetMpiIrecvCallback(
            c: *mut OTF2_GlobalEvtReaderCallbacks,
            f: P2pReqCb,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalEvtReaderCallbacks_SetMpiIsendCompleteCallback(
            c: *mut OTF2_GlobalEvtReaderCallbacks,
            f: ReqCb,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalEvtReaderCallbacks_SetMpiIrecvRequestCallback(
            c: *mut OTF2_GlobalEvtReaderCallbacks,
            f: ReqCb,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalEvtReaderCallbacks_SetMpiCollectiveBeginCallback(
            c: *mut OTF2_GlobalEvtReaderCallbacks,
            f: CollBeginCb,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalEvtReaderCallbacks_SetMpiCollectiveEndCallback(
            c: *mut OTF2_GlobalEvtReaderCallbacks,
            f: CollEndCb,
        ) -> OTF2_ErrorCode;
    }

    #[repr(C)]
    pub struct OTF2_Archive {
        _p: [u8; 0],
    }
    #[repr(C)]
    pub struct OTF2_EvtWriter {
        _p: [u8; 0],
    }
    #[repr(C)]
    pub struct OTF2_DefWriter {
        _p: [u8; 0],
    }
    #[repr(C)]
    pub struct OTF2_GlobalDefWriter {
        _p: [u8; 0],
    }
    pub type PreFlushCb = unsafe extern "C" fn(*mut c_void, u8, u64, *mut c_void, bool) -> u8;
    pub type PostFlushCb = unsafe extern "C" fn(*mut c_void, u8, u64) -> u64;
    /// `OTF2_FlushCallbacks`.
    #[repr(C)]
    pub struct OTF2_FlushCallbacks {
        pub otf2_pre_flush: Option<PreFlushCb>,
        pub otf2_post_flush: Option<PostFlushCb>,
    }
    pub const OTF2_FILEMODE_WRITE: u8 = 0;
    pub const OTF2_SUBSTRATE_POSIX: u8 = 1;
    pub const OTF2_COMPRESSION_NONE: u8 = 1;
    pub const OTF2_FLUSH: u8 = 1;

    unsafe extern "C" {
        pub fn OTF2_Archive_Open(
            path: *const c_char,
            name: *const c_char,
            mode: u8,
            chunk_events: u64,
            chunk_defs: u64,
            substrate: u8,
            compression: u8,
        ) -> *mut OTF2_Archive;
        pub fn OTF2_Archive_Close(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
        pub fn OTF2_Archive_SetFlushCallbacks(
            a: *mut OTF2_Archive,
            cbs: *const OTF2_FlushCallbacks,
            data: *mut c_void,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_Archive_SetSerialCollectiveCallbacks(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
        pub fn OTF2_Archive_OpenEvtFiles(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
        pub fn OTF2_Archive_CloseEvtFiles(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
        pub fn OTF2_Archive_OpenDefFiles(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
        pub fn OTF2_Archive_CloseDefFiles(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
        pub fn OTF2_Archive_GetEvtWriter(a: *mut OTF2_Archive, loc: u64) -> *mut OTF2_EvtWriter;
        pub fn OTF2_Archive_CloseEvtWriter(
            a: *mut OTF2_Archive,
            w: *mut OTF2_EvtWriter,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_Archive_GetDefWriter(a: *mut OTF2_Archive, loc: u64) -> *mut OTF2_DefWriter;
        pub fn OTF2_Archive_CloseDefWriter(
            a: *mut OTF2_Archive,
            w: *mut OTF2_DefWriter,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_Archive_GetGlobalDefWriter(a: *mut OTF2_Archive) -> *mut OTF2_GlobalDefWriter;
        pub fn OTF2_Reader_GetTraceId(r: *mut OTF2_Reader, id: *mut u64) -> OTF2_ErrorCode;

        pub fn OTF2_EvtWriter_Enter(
            w: *mut OTF2_EvtWriter,
            attrs: *mut c_void,
            time: u64,
            region: u32,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_EvtWriter_Leave(
            w: *mut OTF2_EvtWriter,
            attrs: *mut c_void,
            time: u64,
            region: u32,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_EvtWriter_MpiSend(
            w: *mut OTF2_EvtWriter,
            attrs: *mut c_void,
            time: u64,
            receiver: u32,
            comm: u32,
            tag: u32,
            bytes: u64,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_EvtWriter_MpiRecv(
            w: *mut OTF2_EvtWriter,
            attrs: *mut c_void,
            time: u64,
            sender: u32,
            comm: u32,
            tag: u32,
            bytes: u64,
        ) -> OTF2_ErrorCode;

        pub fn OTF2_GlobalDefWriter_WriteClockProperties(
            w: *mut OTF2_GlobalDefWriter,
            resolution: u64,
            offset: u64,
            length: u64,
            realtime: u64,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalDefWriter_WriteString(
            w: *mut OTF2_GlobalDefWriter,
            id: u32,
            s: *const c_char,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalDefWriter_WriteRegion(
            w: *mut OTF2_GlobalDefWriter,
            id: u32,
            name: u32,
            canonical: u32,
            description: u32,
            role: u8,
            paradigm: u8,
            flags: u32,
            file: u32,
            begin: u32,
            end: u32,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalDefWriter_WriteSystemTreeNode(
            w: *mut OTF2_GlobalDefWriter,
            id: u32,
            name: u32,
            class: u32,
            parent: u32,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalDefWriter_WriteLocationGroup(
            w: *mut OTF2_GlobalDefWriter,
            id: u32,
            name: u32,
            kind: u8,
            parent: u32,
            creator: u32,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalDefWriter_WriteLocation(
            w: *mut OTF2_GlobalDefWriter,
            id: u64,
            name: u32,
            kind: u8,
            events: u64,
            group: u32,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalDefWriter_WriteGroup(
            w: *mut OTF2_GlobalDefWriter,
            id: u32,
            name: u32,
            kind: u8,
            paradigm: u8,
            flags: u32,
            n: u32,
            members: *const u64,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalDefWriter_WriteComm(
            w: *mut OTF2_GlobalDefWriter,
            id: u32,
            name: u32,
            group: u32,
            parent: u32,
            flags: u32,
        ) -> OTF2_ErrorCode;
    }

    pub fn ok(code: OTF2_ErrorCode) -> bool {
        code == OTF2_SUCCESS
    }

    pub const CONTINUE: OTF2_CallbackCode = OTF2_CALLBACK_SUCCESS;
    pub const STOP: OTF2_CallbackCode = OTF2_CALLBACK_INTERRUPT;
    pub type Void = c_void;
    pub type Int = c_int;
}

/// OTF2's "undefined" reference (`OTF2_UNDEFINED_UINT32`), e.g. the root of a rootless
/// collective.
pub const UNDEFINED_U32: u32 = u32::MAX;
/// `OTF2_PARADIGM_MPI`.
pub const PARADIGM_MPI: u8 = 4;
/// `OTF2_GROUP_TYPE_COMM_LOCATIONS`: the locations of a paradigm, in rank order.
pub const GROUP_COMM_LOCATIONS: u8 = 4;
/// `OTF2_GROUP_TYPE_COMM_GROUP`: ranks (indices into the paradigm's locations group).
pub const GROUP_COMM_GROUP: u8 = 5;
/// `OTF2_GROUP_TYPE_COMM_SELF`.
pub const GROUP_COMM_SELF: u8 = 6;

/// The archive's clock (`ClockProperties`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    /// Ticks per second.
    pub ticks_per_s: u64,
    /// Timestamp of the trace's start, in ticks.
    pub global_offset: u64,
    /// Length of the trace, in ticks.
    pub trace_length: u64,
}

/// A region (`Region` definition): a function, an MPI call, a loop...
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// Its name.
    pub name: String,
    /// `OTF2_RegionRole`.
    pub role: u8,
    /// `OTF2_Paradigm` ([`PARADIGM_MPI`] for MPI calls).
    pub paradigm: u8,
}

/// A location (`Location` definition): a thread, a process, a GPU stream...
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// Its reference (the events' `locationID`).
    pub id: u64,
    /// Its name.
    pub name: String,
    /// `OTF2_LocationType`.
    pub kind: u8,
    /// Events the definitions announce for it.
    pub events: u64,
    /// Its location group.
    pub group: u32,
}

/// A group (`Group` definition).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// `OTF2_GroupType`.
    pub kind: u8,
    /// `OTF2_Paradigm`.
    pub paradigm: u8,
    /// Members: locations ([`GROUP_COMM_LOCATIONS`]) or ranks ([`GROUP_COMM_GROUP`]).
    pub members: Vec<u64>,
}

/// A communicator (`Comm` definition).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comm {
    /// Its name (`MPI_COMM_WORLD`...).
    pub name: String,
    /// Its group.
    pub group: u32,
}

/// One event record of a location, times in ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// `Enter` a region.
    Enter {
        /// Timestamp.
        time: u64,
        /// Region.
        region: u32,
    },
    /// `Leave` a region.
    Leave {
        /// Timestamp.
        time: u64,
        /// Region.
        region: u32,
    },
    /// `MpiSend` (blocking send issued) or `MpiIsend` (with `request`).
    Send {
        /// Timestamp.
        time: u64,
        /// Receiver's rank in `comm`.
        peer: u32,
        /// Communicator.
        comm: u32,
        /// Tag.
        tag: u32,
        /// Bytes.
        bytes: u64,
        /// Request of a non-blocking send.
        request: Option<u64>,
    },
    /// `MpiRecv` (blocking receive completed) or `MpiIrecv` (non-blocking receive completed,
    /// with `request`).
    Recv {
        /// Timestamp.
        time: u64,
        /// Sender's rank in `comm`.
        peer: u32,
        /// Communicator.
        comm: u32,
        /// Tag.
        tag: u32,
        /// Bytes.
        bytes: u64,
        /// Request of a non-blocking receive.
        request: Option<u64>,
    },
    /// `MpiIsendComplete`.
    IsendComplete {
        /// Timestamp.
        time: u64,
        /// Request.
        request: u64,
    },
    /// `MpiIrecvRequest`: a non-blocking receive posted.
    IrecvRequest {
        /// Timestamp.
        time: u64,
        /// Request.
        request: u64,
    },
    /// `MpiCollectiveBegin`.
    CollectiveBegin {
        /// Timestamp.
        time: u64,
    },
    /// `MpiCollectiveEnd`.
    CollectiveEnd {
        /// Timestamp.
        time: u64,
        /// `OTF2_CollectiveOp` (0 barrier, 1 bcast, ... 11 allreduce, 12 reduce...).
        op: u8,
        /// Communicator.
        comm: u32,
        /// Root's rank in `comm`, or [`UNDEFINED_U32`].
        root: u32,
        /// Bytes sent by this rank (Score-P's convention, see the importer).
        sent: u64,
        /// Bytes received by this rank.
        received: u64,
    },
}

/// An archive's definitions and events.
#[derive(Clone, Debug, Default)]
pub struct Archive {
    /// The clock (none if the archive defines none).
    pub clock: Option<Clock>,
    /// Regions by reference.
    pub regions: HashMap<u32, Region>,
    /// Locations in definition order.
    pub locations: Vec<Location>,
    /// Groups by reference.
    pub groups: HashMap<u32, Group>,
    /// Communicators by reference.
    pub comms: HashMap<u32, Comm>,
    /// Events of `locations[i]`, in their order.
    pub events: Vec<Vec<Event>>,
    /// Event records skipped because the library does not know their kind or their location
    /// is not defined (records of known kinds whatif does not use, such as metrics or OpenMP
    /// events, are skipped without being counted).
    pub other_events: u64,
}

/// Why an archive cannot be read.
#[derive(Debug)]
pub enum Error {
    /// The path cannot be passed to the library (it holds a NUL byte).
    BadPath(String),
    /// A library call failed.
    Library {
        /// The call.
        call: &'static str,
        /// The library's name for the error (`OTF2_ERROR_...`).
        name: String,
        /// Its description.
        description: String,
    },
    /// The archive holds more events than the caller allows.
    TooManyEvents {
        /// Events announced or read.
        events: u64,
        /// The limit.
        limit: u64,
    },
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::BadPath(p) => write!(f, "the path {p:?} holds a NUL byte"),
            Error::Library {
                call,
                name,
                description,
            } => write!(f, "{call} failed: {name} ({description})"),
            Error::TooManyEvents { events, limit } => write!(
                f,
                "the archive holds {events} events, more than the {limit} allowed"
            ),
        }
    }
}

impl std::error::Error for Error {}

fn lib_error(call: &'static str, code: ffi::OTF2_ErrorCode) -> Error {
    // SAFETY: both functions return pointers to static NUL-terminated strings for any code
    // (the library's own tables; unknown codes map to a fixed string).
    let (name, description) = unsafe {
        let n = ffi::OTF2_Error_GetName(code);
        let d = ffi::OTF2_Error_GetDescription(code);
        (cstr(n), cstr(d))
    };
    Error::Library {
        call,
        name,
        description,
    }
}

/// A C string as an owned `String` (lossy), empty for NULL.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string valid for the call.
unsafe fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn check(call: &'static str, code: ffi::OTF2_ErrorCode) -> Result<(), Error> {
    if ffi::ok(code) {
        Ok(())
    } else {
        Err(lib_error(call, code))
    }
}

/// Definitions being read (the global definition callbacks' user data).
#[derive(Default)]
struct Defs {
    clock: Option<Clock>,
    strings: HashMap<u32, String>,
    regions: HashMap<u32, (u32, u8, u8)>,
    locations: Vec<(u64, u32, u8, u64, u32)>,
    groups: HashMap<u32, Group>,
    comms: HashMap<u32, (u32, u32)>,
    /// Group members announced in total (bounded, like events).
    members: u64,
    member_limit: u64,
    over: bool,
}

/// Events being read (the global event callbacks' user data).
struct Events {
    index: HashMap<u64, usize>,
    events: Vec<Vec<Event>>,
    other: u64,
    kept: u64,
    limit: u64,
    over: bool,
}

/// The callbacks' user data as a mutable reference.
///
/// # Safety
/// `user` is the `&mut T` registered with the reader for the duration of the read call that
/// invokes the callback; the library calls callbacks one at a time (serial reader), so no
/// other reference to it is alive meanwhile.
unsafe fn state<'a, T>(user: *mut ffi::Void) -> &'a mut T {
    // SAFETY: see the function's contract.
    unsafe { &mut *(user as *mut T) }
}

unsafe extern "C" fn on_clock(
    user: *mut ffi::Void,
    res: u64,
    off: u64,
    len: u64,
    _rt: u64,
) -> ffi::Int {
    // SAFETY: `user` is the `Defs` registered for `ReadAllGlobalDefinitions`.
    let d = unsafe { state::<Defs>(user) };
    d.clock = Some(Clock {
        ticks_per_s: res,
        global_offset: off,
        trace_length: len,
    });
    ffi::CONTINUE
}

unsafe extern "C" fn on_string(user: *mut ffi::Void, id: u32, s: *const c_char) -> ffi::Int {
    // SAFETY: `user` is the registered `Defs`; `s` is the library's NUL-terminated string,
    // valid during the callback.
    let (d, s) = unsafe { (state::<Defs>(user), cstr(s)) };
    d.members = d.members.saturating_add(1 + s.len() as u64 / 64);
    if d.members > d.member_limit {
        d.over = true;
        return ffi::STOP;
    }
    d.strings.insert(id, s);
    ffi::CONTINUE
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn on_region(
    user: *mut ffi::Void,
    id: u32,
    name: u32,
    _canonical: u32,
    _description: u32,
    role: u8,
    paradigm: u8,
    _flags: u32,
    _file: u32,
    _begin: u32,
    _end: u32,
) -> ffi::Int {
    // SAFETY: `user` is the registered `Defs`.
    let d = unsafe { state::<Defs>(user) };
    d.regions.insert(id, (name, role, paradigm));
    ffi::CONTINUE
}

unsafe extern "C" fn on_location(
    user: *mut ffi::Void,
    id: u64,
    name: u32,
    kind: u8,
    events: u64,
    group: u32,
) -> ffi::Int {
    // SAFETY: `user` is the registered `Defs`.
    let d = unsafe { state::<Defs>(user) };
    d.members = d.members.saturating_add(1);
    if d.members > d.member_limit {
        d.over = true;
        return ffi::STOP;
    }
    d.locations.push((id, name, kind, events, group));
    ffi::CONTINUE
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn on_group(
    user: *mut ffi::Void,
    id: u32,
    _name: u32,
    kind: u8,
    paradigm: u8,
    _flags: u32,
    n: u32,
    members: *const u64,
) -> ffi::Int {
    // SAFETY: `user` is the registered `Defs`.
    let d = unsafe { state::<Defs>(user) };
    d.members = d.members.saturating_add(n as u64);
    if d.members > d.member_limit {
        d.over = true;
        return ffi::STOP;
    }
    let members = if n == 0 || members.is_null() {
        Vec::new()
    } else {
        // SAFETY: the library passes `n` members at `members`, valid during the callback.
        unsafe { std::slice::from_raw_parts(members, n as usize) }.to_vec()
    };
    d.groups.insert(
        id,
        Group {
            kind,
            paradigm,
            members,
        },
    );
    ffi::CONTINUE
}

unsafe extern "C" fn on_comm(
    user: *mut ffi::Void,
    id: u32,
    name: u32,
    group: u32,
    _parent: u32,
    _flags: u32,
) -> ffi::Int {
    // SAFETY: `user` is the registered `Defs`.
    let d = unsafe { state::<Defs>(user) };
    d.comms.insert(id, (name, group));
    ffi::CONTINUE
}

impl Events {
    fn push(&mut self, loc: u64, e: Event) -> ffi::Int {
        let Some(&i) = self.index.get(&loc) else {
            self.other += 1;
            return ffi::CONTINUE;
        };
        self.kept += 1;
        if self.kept > self.limit {
            self.over = true;
            return ffi::STOP;
        }
        self.events[i].push(e);
        ffi::CONTINUE
    }
}

unsafe extern "C" fn on_enter(
    loc: u64,
    time: u64,
    user: *mut ffi::Void,
    _a: *mut ffi::Void,
    region: u32,
) -> ffi::Int {
    // SAFETY: `user` is the `Events` registered for `ReadAllGlobalEvents`.
    unsafe { state::<Events>(user) }.push(loc, Event::Enter { time, region })
}

unsafe extern "C" fn on_leave(
    loc: u64,
    time: u64,
    user: *mut ffi::Void,
    _a: *mut ffi::Void,
    region: u32,
) -> ffi::Int {
    // SAFETY: `user` is the registered `Events`.
    unsafe { state::<Events>(user) }.push(loc, Event::Leave { time, region })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn on_send(
    loc: u64,
    time: u64,
    user: *mut ffi::Void,
    _a: *mut ffi::Void,
    peer: u32,
    comm: u32,
    tag: u32,
    bytes: u64,
) -> ffi::Int {
    let e = Event::Send {
        time,
        peer,
        comm,
        tag,
        bytes,
        request: None,
    };
    // SAFETY: `user` is the registered `Events`.
    unsafe { state::<Events>(user) }.push(loc, e)
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn on_isend(
    loc: u64,
    time: u64,
    user: *mut ffi::Void,
    _a: *mut ffi::Void,
    peer: u32,
    comm: u32,
    tag: u32,
    bytes: u64,
    request: u64,
) -> ffi::Int {
    let e = Event::Send {
        time,
        peer,
        comm,
        tag,
        bytes,
        request: Some(request),
    };
    // SAFETY: `user` is the registered `Events`.
    unsafe { state::<Events>(user) }.push(loc, e)
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn on_recv(
    loc: u64,
    time: u64,
    user: *mut ffi::Void,
    _a: *mut ffi::Void,
    peer: u32,
    comm: u32,
    tag: u32,
    bytes: u64,
) -> ffi::Int {
    let e = Event::Recv {
        time,
        peer,
        comm,
        tag,
        bytes,
        request: None,
    };
    // SAFETY: `user` is the registered `Events`.
    unsafe { state::<Events>(user) }.push(loc, e)
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn on_irecv(
    loc: u64,
    time: u64,
    user: *mut ffi::Void,
    _a: *mut ffi::Void,
    peer: u32,
    comm: u32,
    tag: u32,
    bytes: u64,
    request: u64,
) -> ffi::Int {
    let e = Event::Recv {
        time,
        peer,
        comm,
        tag,
        bytes,
        request: Some(request),
    };
    // SAFETY: `user` is the registered `Events`.
    unsafe { state::<Events>(user) }.push(loc, e)
}

unsafe extern "C" fn on_isend_complete(
    loc: u64,
    time: u64,
    user: *mut ffi::Void,
    _a: *mut ffi::Void,
    request: u64,
) -> ffi::Int {
    // SAFETY: `user` is the registered `Events`.
    unsafe { state::<Events>(user) }.push(loc, Event::IsendComplete { time, request })
}

unsafe extern "C" fn on_irecv_request(
    loc: u64,
    time: u64,
    user: *mut ffi::Void,
    _a: *mut ffi::Void,
    request: u64,
) -> ffi::Int {
    // SAFETY: `user` is the registered `Events`.
    unsafe { state::<Events>(user) }.push(loc, Event::IrecvRequest { time, request })
}

unsafe extern "C" fn on_coll_begin(
    loc: u64,
    time: u64,
    user: *mut ffi::Void,
    _a: *mut ffi::Void,
) -> ffi::Int {
    // SAFETY: `user` is the registered `Events`.
    unsafe { state::<Events>(user) }.push(loc, Event::CollectiveBegin { time })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn on_coll_end(
    loc: u64,
    time: u64,
    user: *mut ffi::Void,
    _a: *mut ffi::Void,
    op: u8,
    comm: u32,
    root: u32,
    sent: u64,
    received: u64,
) -> ffi::Int {
    let e = Event::CollectiveEnd {
        time,
        op,
        comm,
        root,
        sent,
        received,
    };
    // SAFETY: `user` is the registered `Events`.
    unsafe { state::<Events>(user) }.push(loc, e)
}

unsafe extern "C" fn on_unknown(
    _loc: u64,
    _time: u64,
    user: *mut ffi::Void,
    _a: *mut ffi::Void,
) -> ffi::Int {
    // SAFETY: `user` is the registered `Events`.
    unsafe { state::<Events>(user) }.other += 1;
    ffi::CONTINUE
}

/// Silences the library's messages to standard error: errors come back as codes.
unsafe extern "C" fn quiet(
    _user: *mut ffi::Void,
    _file: *const c_char,
    _line: u64,
    _function: *const c_char,
    code: ffi::OTF2_ErrorCode,
    _fmt: *const c_char,
    _va: *mut ffi::Void,
) -> ffi::OTF2_ErrorCode {
    code
}

/// An open reader, closed on drop.
struct Reader(*mut ffi::OTF2_Reader);

impl Drop for Reader {
    fn drop(&mut self) {
        // SAFETY: `self.0` came from `OTF2_Reader_Open` (non-NULL) and is closed only here;
        // closing also releases every reader handle obtained from it.
        unsafe {
            ffi::OTF2_Reader_Close(self.0);
        }
    }
}

/// Reads the archive whose anchor file is `anchor` (`.../traces.otf2`), keeping at most
/// `max_events` events (also the bound on definition records).
pub fn read(anchor: &Path, max_events: u64) -> Result<Archive, Error> {
    let c_path = CString::new(anchor.as_os_str().as_encoded_bytes())
        .map_err(|_| Error::BadPath(anchor.display().to_string()))?;
    // SAFETY: `quiet` matches `OTF2_ErrorCallback` (its `va_list` argument is pointer-sized
    // on the supported targets and never read); registering is process-wide and idempotent.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    unsafe {
        ffi::OTF2_Error_RegisterCallback(Some(quiet), std::ptr::null_mut());
    }
    // SAFETY: `c_path` is a valid NUL-terminated string for the duration of the call.
    let raw = unsafe { ffi::OTF2_Reader_Open(c_path.as_ptr()) };
    if raw.is_null() {
        return Err(Error::Library {
            call: "OTF2_Reader_Open",
            name: "NULL reader".into(),
            description: format!("{} is not a readable OTF2 anchor file", anchor.display()),
        });
    }
    let reader = Reader(raw);
    let r = reader.0;
    // SAFETY (this block and the ones below): `r` is a live reader owned by `reader`; every
    // handle passed back to the library was obtained from `r` and checked for NULL; the
    // callback tables are created, filled with functions of the exact C signatures declared in
    // `ffi`, registered and deleted (registration copies them); user-data pointers are
    // `&mut` locals that outlive the read calls that use them.
    unsafe {
        check(
            "OTF2_Reader_SetSerialCollectiveCallbacks",
            ffi::OTF2_Reader_SetSerialCollectiveCallbacks(r),
        )?;
    }
    let mut defs = Defs {
        member_limit: max_events,
        ..Defs::default()
    };
    unsafe {
        let gdr = ffi::OTF2_Reader_GetGlobalDefReader(r);
        if gdr.is_null() {
            return Err(Error::Library {
                call: "OTF2_Reader_GetGlobalDefReader",
                name: "NULL reader".into(),
                description: "the archive has no global definitions".into(),
            });
        }
        let cbs = ffi::OTF2_GlobalDefReaderCallbacks_New();
        if cbs.is_null() {
            return Err(lib_error("OTF2_GlobalDefReaderCallbacks_New", 1));
        }
        ffi::OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(cbs, on_clock);
        ffi::OTF2_GlobalDefReaderCallbacks_SetStringCallback(cbs, on_string);
        ffi::OTF2_GlobalDefReaderCallbacks_SetRegionCallback(cbs, on_region);
        ffi::OTF2_GlobalDefReaderCallbacks_SetLocationCallback(cbs, on_location);
        ffi::OTF2_GlobalDefReaderCallbacks_SetGroupCallback(cbs, on_group);
        ffi::OTF2_GlobalDefReaderCallbacks_SetCommCallback(cbs, on_comm);
        let reg = ffi::OTF2_Reader_RegisterGlobalDefCallbacks(
            r,
            gdr,
            cbs,
            &mut defs as *mut Defs as *mut ffi::Void,
        );
        ffi::OTF2_GlobalDefReaderCallbacks_Delete(cbs);
        check("OTF2_Reader_RegisterGlobalDefCallbacks", reg)?;
        let mut n = 0u64;
        let read = ffi::OTF2_Reader_ReadAllGlobalDefinitions(r, gdr, &mut n);
        ffi::OTF2_Reader_CloseGlobalDefReader(r, gdr);
        if defs.over {
            return Err(Error::TooManyEvents {
                events: defs.members,
                limit: max_events,
            });
        }
        check("OTF2_Reader_ReadAllGlobalDefinitions", read)?;
    }
    let announced: u64 = defs
        .locations
        .iter()
        .fold(0u64, |a, l| a.saturating_add(l.3));
    if announced > max_events {
        return Err(Error::TooManyEvents {
            events: announced,
            limit: max_events,
        });
    }
    let name = |id: u32| defs.strings.get(&id).cloned().unwrap_or_default();
    let mut archive = Archive {
        clock: defs.clock,
        regions: defs
            .regions
            .iter()
            .map(|(&id, &(n, role, paradigm))| {
                (
                    id,
                    Region {
                        name: name(n),
                        role,
                        paradigm,
                    },
                )
            })
            .collect(),
        locations: defs
            .locations
            .iter()
            .map(|&(id, n, kind, events, group)| Location {
                id,
                name: name(n),
                kind,
                events,
                group,
            })
            .collect(),
        groups: std::mem::take(&mut defs.groups),
        comms: defs
            .comms
            .iter()
            .map(|(&id, &(n, group))| {
                (
                    id,
                    Comm {
                        name: name(n),
                        group,
                    },
                )
            })
            .collect(),
        events: Vec::new(),
        other_events: 0,
    };
    let mut ev = Events {
        index: archive
            .locations
            .iter()
            .enumerate()
            .map(|(i, l)| (l.id, i))
            .collect(),
        events: archive
            .locations
            .iter()
            .map(|l| Vec::with_capacity(l.events.min(1 << 20) as usize))
            .collect(),
        other: 0,
        kept: 0,
        limit: max_events,
        over: false,
    };
    unsafe {
        for l in &archive.locations {
            check(
                "OTF2_Reader_SelectLocation",
                ffi::OTF2_Reader_SelectLocation(r, l.id),
            )?;
        }
        // Local definition files are optional (the OTF2 reader example treats them so);
        // reading them sets up the mappings of local to global references.
        let defs_open = ffi::ok(ffi::OTF2_Reader_OpenDefFiles(r));
        check("OTF2_Reader_OpenEvtFiles", ffi::OTF2_Reader_OpenEvtFiles(r))?;
        for l in &archive.locations {
            if defs_open {
                let dr = ffi::OTF2_Reader_GetDefReader(r, l.id);
                if !dr.is_null() {
                    let mut n = 0u64;
                    let res = ffi::OTF2_Reader_ReadAllLocalDefinitions(r, dr, &mut n);
                    ffi::OTF2_Reader_CloseDefReader(r, dr);
                    check("OTF2_Reader_ReadAllLocalDefinitions", res)?;
                }
            }
            if ffi::OTF2_Reader_GetEvtReader(r, l.id).is_null() {
                return Err(Error::Library {
                    call: "OTF2_Reader_GetEvtReader",
                    name: "NULL reader".into(),
                    description: format!("no events for location {}", l.id),
                });
            }
        }
        if defs_open {
            ffi::OTF2_Reader_CloseDefFiles(r);
        }
        let ger = ffi::OTF2_Reader_GetGlobalEvtReader(r);
        if ger.is_null() {
            return Err(Error::Library {
                call: "OTF2_Reader_GetGlobalEvtReader",
                name: "NULL reader".into(),
                description: "the event files cannot be read".into(),
            });
        }
        let cbs = ffi::OTF2_GlobalEvtReaderCallbacks_New();
        if cbs.is_null() {
            return Err(lib_error("OTF2_GlobalEvtReaderCallbacks_New", 1));
        }
        ffi::OTF2_GlobalEvtReaderCallbacks_SetUnknownCallback(cbs, on_unknown);
        ffi::OTF2_GlobalEvtReaderCallbacks_SetEnterCallback(cbs, on_enter);
        ffi::OTF2_GlobalEvtReaderCallbacks_SetLeaveCallback(cbs, on_leave);
        ffi::OTF2_GlobalEvtReaderCallbacks_SetMpiSendCallback(cbs, on_send);
        ffi::OTF2_GlobalEvtReaderCallbacks_SetMpiIsendCallback(cbs, on_isend);
        ffi::OTF2_GlobalEvtReaderCallbacks_SetMpiRecvCallback(cbs, on_recv);
        ffi::OTF2_GlobalEvtReaderCallbacks_SetMpiIrecvCallback(cbs, on_irecv);
        ffi::OTF2_GlobalEvtReaderCallbacks_SetMpiIsendCompleteCallback(cbs, on_isend_complete);
        ffi::OTF2_GlobalEvtReaderCallbacks_SetMpiIrecvRequestCallback(cbs, on_irecv_request);
        ffi::OTF2_GlobalEvtReaderCallbacks_SetMpiCollectiveBeginCallback(cbs, on_coll_begin);
        ffi::OTF2_GlobalEvtReaderCallbacks_SetMpiCollectiveEndCallback(cbs, on_coll_end);
        let reg = ffi::OTF2_Reader_RegisterGlobalEvtCallbacks(
            r,
            ger,
            cbs,
            &mut ev as *mut Events as *mut ffi::Void,
        );
        ffi::OTF2_GlobalEvtReaderCallbacks_Delete(cbs);
        check("OTF2_Reader_RegisterGlobalEvtCallbacks", reg)?;
        let mut n = 0u64;
        let read = ffi::OTF2_Reader_ReadAllGlobalEvents(r, ger, &mut n);
        ffi::OTF2_Reader_CloseGlobalEvtReader(r, ger);
        ffi::OTF2_Reader_CloseEvtFiles(r);
        if ev.over {
            return Err(Error::TooManyEvents {
                events: ev.kept,
                limit: max_events,
            });
        }
        check("OTF2_Reader_ReadAllGlobalEvents", read)?;
    }
    archive.events = ev.events;
    archive.other_events = ev.other;
    drop(reader);
    Ok(archive)
}

/// A run to write as an OTF2 archive: one location (an MPI rank) per PE, in picoseconds.
#[derive(Clone, Debug, Default)]
pub struct Output {
    /// Names of the user regions (entry methods).
    pub regions: Vec<String>,
    /// Per rank, its events in time order (enters and leaves nested; `Enter`/`Leave` regions
    /// index `regions`, `Send`/`Recv` peers are ranks, communicators and requests are not
    /// written; other kinds are skipped), times in picoseconds.
    pub events: Vec<Vec<Event>>,
    /// Name of the system tree's root (the machine).
    pub machine: String,
}

unsafe extern "C" fn pre_flush(
    _user: *mut ffi::Void,
    _file_type: u8,
    _location: u64,
    _caller: *mut ffi::Void,
    _final: bool,
) -> u8 {
    ffi::OTF2_FLUSH
}

/// An open archive being written, closed on drop.
struct WriteArchive(*mut ffi::OTF2_Archive);

impl Drop for WriteArchive {
    fn drop(&mut self) {
        // SAFETY: `self.0` came from `OTF2_Archive_Open` (non-NULL) and is closed only here.
        unsafe {
            ffi::OTF2_Archive_Close(self.0);
        }
    }
}

/// Writes `out` as the OTF2 archive `dir/<name>.otf2` (+ `<name>.def`, `<name>/`); `dir` must
/// not hold an archive of that name. Timer: 10^12 ticks per second (picoseconds).
///
/// The library gives every archive a random trace id (and has no call to set it); `write`
/// replaces it in the anchor file by a hash of `out`, so the same run gives the same bytes.
pub fn write(dir: &Path, name: &str, out: &Output) -> Result<(), Error> {
    let c_dir = CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|_| Error::BadPath(dir.display().to_string()))?;
    let c_name = CString::new(name).map_err(|_| Error::BadPath(name.to_string()))?;
    let cstring = |s: &str| CString::new(s.replace('\0', " ")).unwrap_or_default();
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    // SAFETY: as in `read`.
    unsafe {
        ffi::OTF2_Error_RegisterCallback(Some(quiet), std::ptr::null_mut());
    }
    // Declared before the archive, so that it outlives it on every path (locals drop in
    // reverse order): closing the archive flushes through it.
    let flush = ffi::OTF2_FlushCallbacks {
        otf2_pre_flush: Some(pre_flush),
        otf2_post_flush: None,
    };
    // SAFETY: both strings are valid and NUL-terminated for the call.
    let raw = unsafe {
        ffi::OTF2_Archive_Open(
            c_dir.as_ptr(),
            c_name.as_ptr(),
            ffi::OTF2_FILEMODE_WRITE,
            1 << 20,
            4 << 20,
            ffi::OTF2_SUBSTRATE_POSIX,
            ffi::OTF2_COMPRESSION_NONE,
        )
    };
    if raw.is_null() {
        return Err(Error::Library {
            call: "OTF2_Archive_Open",
            name: "NULL archive".into(),
            description: format!("cannot create an archive in {}", dir.display()),
        });
    }
    let archive = WriteArchive(raw);
    let a = archive.0;
    let ranks = out.events.len();
    let mut last = 0u64;
    let mut trace_id = 0u64;
    // SAFETY (this block): `a` is a live archive owned by `archive`; `flush` outlives every
    // call that may flush (declared before `archive`, it is dropped after it on every path); writers are obtained from `a`, checked for NULL, and
    // closed before the files are; strings passed are NUL-terminated and outlive their call.
    unsafe {
        check(
            "OTF2_Archive_SetFlushCallbacks",
            ffi::OTF2_Archive_SetFlushCallbacks(a, &flush, std::ptr::null_mut()),
        )?;
        check(
            "OTF2_Archive_SetSerialCollectiveCallbacks",
            ffi::OTF2_Archive_SetSerialCollectiveCallbacks(a),
        )?;
        check(
            "OTF2_Archive_OpenEvtFiles",
            ffi::OTF2_Archive_OpenEvtFiles(a),
        )?;
        let null = std::ptr::null_mut();
        for (r, evs) in out.events.iter().enumerate() {
            let w = ffi::OTF2_Archive_GetEvtWriter(a, r as u64);
            if w.is_null() {
                return Err(lib_error("OTF2_Archive_GetEvtWriter", 1));
            }
            for e in evs {
                let code = match *e {
                    Event::Enter { time, region } => {
                        ffi::OTF2_EvtWriter_Enter(w, null, time, region)
                    }
                    Event::Leave { time, region } => {
                        ffi::OTF2_EvtWriter_Leave(w, null, time, region)
                    }
                    Event::Send {
                        time,
                        peer,
                        tag,
                        bytes,
                        ..
                    } => ffi::OTF2_EvtWriter_MpiSend(w, null, time, peer, 0, tag, bytes),
                    Event::Recv {
                        time,
                        peer,
                        tag,
                        bytes,
                        ..
                    } => ffi::OTF2_EvtWriter_MpiRecv(w, null, time, peer, 0, tag, bytes),
                    _ => continue,
                };
                check("OTF2_EvtWriter (event)", code)?;
                last = last.max(event_time(e));
            }
            check(
                "OTF2_Archive_CloseEvtWriter",
                ffi::OTF2_Archive_CloseEvtWriter(a, w),
            )?;
        }
        check(
            "OTF2_Archive_CloseEvtFiles",
            ffi::OTF2_Archive_CloseEvtFiles(a),
        )?;
        // Every location needs a (here empty) local definitions file.
        check(
            "OTF2_Archive_OpenDefFiles",
            ffi::OTF2_Archive_OpenDefFiles(a),
        )?;
        for r in 0..ranks {
            let w = ffi::OTF2_Archive_GetDefWriter(a, r as u64);
            if w.is_null() {
                return Err(lib_error("OTF2_Archive_GetDefWriter", 1));
            }
            check(
                "OTF2_Archive_CloseDefWriter",
                ffi::OTF2_Archive_CloseDefWriter(a, w),
            )?;
        }
        check(
            "OTF2_Archive_CloseDefFiles",
            ffi::OTF2_Archive_CloseDefFiles(a),
        )?;
        let g = ffi::OTF2_Archive_GetGlobalDefWriter(a);
        if g.is_null() {
            return Err(lib_error("OTF2_Archive_GetGlobalDefWriter", 1));
        }
        check(
            "OTF2_GlobalDefWriter_WriteClockProperties",
            ffi::OTF2_GlobalDefWriter_WriteClockProperties(g, 1_000_000_000_000, 0, last, u64::MAX),
        )?;
        // Strings: 0 "", 1 machine, 2 "MPI_COMM_WORLD", 3 "Master thread", 4.. regions, then
        // one "MPI Rank r" per rank.
        let mut strings: Vec<CString> = vec![
            cstring(""),
            cstring(&out.machine),
            cstring("MPI_COMM_WORLD"),
            cstring("Master thread"),
        ];
        let region_base = strings.len() as u32;
        strings.extend(out.regions.iter().map(|n| cstring(n)));
        let rank_base = strings.len() as u32;
        strings.extend((0..ranks).map(|r| cstring(&format!("MPI Rank {r}"))));
        for (i, s) in strings.iter().enumerate() {
            check(
                "OTF2_GlobalDefWriter_WriteString",
                ffi::OTF2_GlobalDefWriter_WriteString(g, i as u32, s.as_ptr()),
            )?;
        }
        check(
            "OTF2_GlobalDefWriter_WriteSystemTreeNode",
            ffi::OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, 1, 1, UNDEFINED_U32),
        )?;
        for r in 0..ranks as u32 {
            check(
                "OTF2_GlobalDefWriter_WriteLocationGroup",
                ffi::OTF2_GlobalDefWriter_WriteLocationGroup(
                    g,
                    r,
                    rank_base + r,
                    1,
                    0,
                    UNDEFINED_U32,
                ),
            )?;
        }
        for (i, _) in out.regions.iter().enumerate() {
            let name = region_base + i as u32;
            check(
                "OTF2_GlobalDefWriter_WriteRegion",
                ffi::OTF2_GlobalDefWriter_WriteRegion(
                    g,
                    i as u32,
                    name,
                    name,
                    0,
                    1,
                    1,
                    0,
                    UNDEFINED_U32,
                    0,
                    0,
                ),
            )?;
        }
        for (r, evs) in out.events.iter().enumerate() {
            check(
                "OTF2_GlobalDefWriter_WriteLocation",
                ffi::OTF2_GlobalDefWriter_WriteLocation(
                    g,
                    r as u64,
                    3,
                    1,
                    evs.len() as u64,
                    r as u32,
                ),
            )?;
        }
        let locations: Vec<u64> = (0..ranks as u64).collect();
        check(
            "OTF2_GlobalDefWriter_WriteGroup",
            ffi::OTF2_GlobalDefWriter_WriteGroup(
                g,
                0,
                0,
                GROUP_COMM_LOCATIONS,
                PARADIGM_MPI,
                0,
                ranks as u32,
                locations.as_ptr(),
            ),
        )?;
        check(
            "OTF2_GlobalDefWriter_WriteGroup",
            ffi::OTF2_GlobalDefWriter_WriteGroup(
                g,
                1,
                0,
                GROUP_COMM_GROUP,
                PARADIGM_MPI,
                0,
                ranks as u32,
                locations.as_ptr(),
            ),
        )?;
        check(
            "OTF2_GlobalDefWriter_WriteComm",
            ffi::OTF2_GlobalDefWriter_WriteComm(g, 0, 2, 1, UNDEFINED_U32, 0),
        )?;
    }
    // Closing flushes through `flush`, which is still alive here.
    drop(archive);
    let anchor = dir.join(format!("{name}.otf2"));
    let c_anchor = CString::new(anchor.as_os_str().as_encoded_bytes())
        .map_err(|_| Error::BadPath(anchor.display().to_string()))?;
    // SAFETY: `c_anchor` is NUL-terminated; the reader is checked for NULL, closed by
    // `Reader`'s drop, and `trace_id` outlives the call.
    unsafe {
        let r = ffi::OTF2_Reader_Open(c_anchor.as_ptr());
        if r.is_null() {
            return Err(lib_error("OTF2_Reader_Open", 1));
        }
        let reader = Reader(r);
        check(
            "OTF2_Reader_GetTraceId",
            ffi::OTF2_Reader_GetTraceId(reader.0, &mut trace_id),
        )?;
    }
    stable_trace_id(&anchor, trace_id, content_hash(out))
}

/// FNV-1a over the regions and events of `out`.
fn content_hash(out: &Output) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut eat = |x: u64| {
        for b in x.to_le_bytes() {
            h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    };
    for r in &out.regions {
        for b in r.bytes() {
            eat(b as u64);
        }
        eat(u64::MAX);
    }
    for evs in &out.events {
        for e in evs {
            let (kind, a, b, c) = match *e {
                Event::Enter { time, region } => (0, time, region as u64, 0),
                Event::Leave { time, region } => (1, time, region as u64, 0),
                Event::Send {
                    time,
                    peer,
                    tag,
                    bytes,
                    ..
                } => (2, time, (peer as u64) << 32 | tag as u64, bytes),
                Event::Recv {
                    time,
                    peer,
                    tag,
                    bytes,
                    ..
                } => (3, time, (peer as u64) << 32 | tag as u64, bytes),
                _ => continue,
            };
            eat(kind);
            eat(a);
            eat(b);
            eat(c);
        }
        eat(u64::MAX);
    }
    h | 1
}

/// Replaces the random `id` in the anchor file by `stable` (where the id's 8 bytes appear
/// once, big- or little-endian; otherwise the file is left as the library wrote it).
fn stable_trace_id(anchor: &Path, id: u64, stable: u64) -> Result<(), Error> {
    let io = |e: std::io::Error| Error::Library {
        call: "trace id",
        name: "I/O".into(),
        description: format!("{}: {e}", anchor.display()),
    };
    let mut bytes = std::fs::read(anchor).map_err(io)?;
    for (old, new) in [
        (id.to_be_bytes(), stable.to_be_bytes()),
        (id.to_le_bytes(), stable.to_le_bytes()),
    ] {
        let hits: Vec<usize> = bytes
            .windows(8)
            .enumerate()
            .filter(|(_, w)| *w == old)
            .map(|(i, _)| i)
            .collect();
        if let [at] = hits[..] {
            bytes[at..at + 8].copy_from_slice(&new);
            std::fs::write(anchor, &bytes).map_err(io)?;
            return Ok(());
        }
    }
    Ok(())
}

/// The timestamp of any event.
pub fn event_time(e: &Event) -> u64 {
    match *e {
        Event::Enter { time, .. }
        | Event::Leave { time, .. }
        | Event::Send { time, .. }
        | Event::Recv { time, .. }
        | Event::IsendComplete { time, .. }
        | Event::IrecvRequest { time, .. }
        | Event::CollectiveBegin { time }
        | Event::CollectiveEnd { time, .. } => time,
    }
}
