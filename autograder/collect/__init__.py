"""Collecting submissions: notebooks from a folder, a zip or an LMS export; rosters; lateness."""
