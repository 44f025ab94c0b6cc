"""Publishing a table as a Delta log beside it, for engines that read Delta (docs/interop.md)."""
