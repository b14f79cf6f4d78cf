"""The kernel layer: config fragments, flavours and incremental builds."""
