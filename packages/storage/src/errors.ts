// The storage errors, apart so that every driver can throw them without importing index.ts.
export class BucketError extends Error {
  override name = 'BucketError'
}

/** The location names nothing stored (a file:// clip deleted, or never written). */
export class BucketObjectMissingError extends BucketError {
  override name = 'BucketObjectMissingError'
}

