package rdb

import (
	"encoding/binary"
	"errors"
	"hash/crc64"
)

// Version is the RDB version written into payloads: Redis 7.0's.
// MaxVersion is the newest accepted: Redis 7.2's, whose only new value
// encoding a payload may carry is TypeSetListpack (streams aside).
const (
	Version    = 10
	MaxVersion = 11
)

// Value types, the first byte of a DUMP payload (Redis' RDB_TYPE_*).
const (
	TypeString           = 0
	TypeList             = 1
	TypeSet              = 2
	TypeZSet             = 3
	TypeHash             = 4
	TypeZSet2            = 5
	TypeModule           = 6
	TypeModule2          = 7
	TypeHashZipmap       = 9
	TypeListZiplist      = 10
	TypeSetIntset        = 11
	TypeZSetZiplist      = 12
	TypeHashZiplist      = 13
	TypeListQuicklist    = 14
	TypeStreamListpacks  = 15
	TypeHashListpack     = 16
	TypeZSetListpack     = 17
	TypeListQuicklist2   = 18
	TypeStreamListpacks2 = 19
	TypeSetListpack      = 20
	TypeStreamListpacks3 = 21

	// OpcodeFunction2 starts a function library in FUNCTION DUMP.
	OpcodeFunction2 = 245
)

// Quicklist 2 node containers.
const (
	ContainerPlain  = 1
	ContainerPacked = 2
)

var (
	// ErrPayload is a payload whose version is too new or whose checksum
	// does not match: Redis' "DUMP payload version or checksum are wrong".
	ErrPayload = errors.New("DUMP payload version or checksum are wrong")
	// ErrFormat is a payload whose checksum holds but whose content does
	// not decode: Redis' "Bad data format".
	ErrFormat = errors.New("bad data format")
	// ErrBudget is a payload that would expand past the reader's budget.
	ErrBudget = errors.New("DUMP payload expands past the limit on decoded bytes")
)

// crcJones is CRC-64/Jones, reflected: Redis' crc64.
var crcJones = crc64.MakeTable(0x95ac9329ac4bc9b5)

// Checksum is Redis' crc64(0, p). Go's crc64 inverts the register before
// and after; Redis' does not.
func Checksum(p []byte) uint64 { return ^crc64.Update(^uint64(0), crcJones, p) }

// Seal appends the trailer to body, a serialized value: Version and the
// checksum of body and version.
func Seal(body []byte) []byte {
	body = binary.LittleEndian.AppendUint16(body, Version)
	return binary.LittleEndian.AppendUint64(body, Checksum(body))
}

// Open checks a payload's trailer and returns the serialized value before
// it, as Redis' verifyDumpPayload does: at least the ten trailer bytes, a
// version no newer than MaxVersion, a matching checksum.
func Open(p []byte) ([]byte, error) {
	if len(p) < 10 {
		return nil, ErrPayload
	}
	body, footer := p[:len(p)-8], p[len(p)-8:]
	if v := binary.LittleEndian.Uint16(body[len(body)-2:]); v > MaxVersion ||
		binary.LittleEndian.Uint64(footer) != Checksum(body) {
		return nil, ErrPayload
	}
	return body[:len(body)-2], nil
}
