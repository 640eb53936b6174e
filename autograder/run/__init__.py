"""Running a submission sandboxed: its test cells restored, its kernel in an allow-list root, the probe."""
