package backup

import "strings"

// OpenStore returns the backup set dest names: s3://bucket/prefix?... (see
// S3Credentials for the keys) or a local directory.
func OpenStore(dest string, creds S3Credentials) (Store, error) {
	if strings.HasPrefix(dest, "s3://") {
		return newS3Store(dest, creds)
	}
	return NewDirStore(dest), nil
}
