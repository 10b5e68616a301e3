"""Stand-ins for services the product talks to: a Redfish BMC server and the MAAS API."""
