"""The built-in PXE backend: dnsmasq, iPXE scripts, the boot and phone-home HTTP server."""
