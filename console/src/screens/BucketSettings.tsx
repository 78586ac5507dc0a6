export function BucketSettings({ bucket }: { bucket: string }) {
  return <section><h2>{bucket}</h2></section>;
}
