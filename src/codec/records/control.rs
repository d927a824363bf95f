//! Control records: transaction markers and KRaft control records.

use super::error::ErrorKind;

/// The type of a control record (the second int16 of its key).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ControlRecordType {
    /// 0: the transaction was aborted.
    Abort,
    /// 1: the transaction was committed.
    Commit,
    /// 2: KRaft leader change.
    LeaderChange,
    /// 3: KRaft snapshot header.
    SnapshotHeader,
    /// 4: KRaft snapshot footer.
    SnapshotFooter,
    /// 5: KRaft version.
    KRaftVersion,
    /// 6: KRaft voters.
    KRaftVoters,
    /// Any other type, by number.
    Other(i16),
}

impl ControlRecordType {
    /// The type with wire value `n`.
    pub const fn from_i16(n: i16) -> Self {
        match n {
            0 => ControlRecordType::Abort,
            1 => ControlRecordType::Commit,
            2 => ControlRecordType::LeaderChange,
            3 => ControlRecordType::SnapshotHeader,
            4 => ControlRecordType::SnapshotFooter,
            5 => ControlRecordType::KRaftVersion,
            6 => ControlRecordType::KRaftVoters,
            n => ControlRecordType::Other(n),
        }
    }

    /// The wire value.
    pub const fn as_i16(self) -> i16 {
        match self {
            ControlRecordType::Abort => 0,
            ControlRecordType::Commit => 1,
            ControlRecordType::LeaderChange => 2,
            ControlRecordType::SnapshotHeader => 3,
            ControlRecordType::SnapshotFooter => 4,
            ControlRecordType::KRaftVersion => 5,
            ControlRecordType::KRaftVoters => 6,
            ControlRecordType::Other(n) => n,
        }
    }
}

/// A control record: its key's version and type, and for transaction markers (ABORT,
/// COMMIT) the value's version and coordinator epoch. The value of other types is left as
/// bytes (KRaft records are themselves versioned messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControlRecord<'a> {
    /// Version of the key (0).
    pub key_version: i16,
    /// The type.
    pub kind: ControlRecordType,
    /// For ABORT and COMMIT: the marker's version and the transaction coordinator's epoch.
    pub marker: Option<EndTxnMarker>,
    /// The value bytes, if any.
    pub value: Option<&'a [u8]>,
}

/// The value of an ABORT or COMMIT marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndTxnMarker {
    /// Version of the value (0).
    pub version: i16,
    /// Epoch of the transaction coordinator that wrote the marker.
    pub coordinator_epoch: i32,
}

impl<'a> ControlRecord<'a> {
    /// Reads a control record's key and value.
    pub fn parse(key: Option<&[u8]>, value: Option<&'a [u8]>) -> Result<Self, ErrorKind> {
        let key = key.ok_or(ErrorKind::InvalidControlRecord)?;
        let [v0, v1, t0, t1, ..] = *key else { return Err(ErrorKind::InvalidControlRecord) };
        let key_version = i16::from_be_bytes([v0, v1]);
        let kind = ControlRecordType::from_i16(i16::from_be_bytes([t0, t1]));
        let marker = match kind {
            ControlRecordType::Abort | ControlRecordType::Commit => {
                let v = value.ok_or(ErrorKind::InvalidControlRecord)?;
                let [a, b, c, d, e, f, ..] = *v else { return Err(ErrorKind::InvalidControlRecord) };
                Some(EndTxnMarker {
                    version: i16::from_be_bytes([a, b]),
                    coordinator_epoch: i32::from_be_bytes([c, d, e, f]),
                })
            }
            _ => None,
        };
        Ok(ControlRecord { key_version, kind, marker, value })
    }
}
