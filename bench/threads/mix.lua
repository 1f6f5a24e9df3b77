local qs = {"q=pedido", "q=entrega", "q=nota%20fiscal", "q=pode%20enviar", "q=atrasou&direction=inbound", "q=confirmacao&limit=50"}
local i = 0
request = function()
  i = i + 1
  return wrk.format("GET", "/contacts/message-search?organization_id=" .. org .. "&" .. qs[(i % #qs) + 1], {["Authorization"] = "Bearer " .. key})
end
init = function(args) org = args[1]; key = args[2] end
